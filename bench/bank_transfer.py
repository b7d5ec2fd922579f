"""Export and import of a bank: rows per second and the exporter's peak Python memory.

A synthetic bank (facts with random 384-dimension vectors, one entity mention and one link
each, a journal message per fact) is written straight into an embedded Postgres; then
`recall_api.bank_transfer.export_lines` streams it to a file and `import_lines` reads that file
into a second bank id (every id mapped, as `--as` does). Peak memory is tracemalloc's peak
during the export: flat in the bank's size means it streams.

    python -m bench.bank_transfer --facts 20000 100000 --json bench/results/bank_transfer.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import tempfile
import time
import tracemalloc
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import asyncpg
import numpy as np

from bench.common import console, print_table, write_json
from tempr.recall_api.bank_transfer import export_lines, import_lines
from tempr.store.embedding_column import check_embedding_model
from tempr.store.migrate import apply_migrations
from tempr.store.pool import create_pool
from tempr.streams.embedded import EmbeddedPostgres

MODEL = "bench-random-384"
DIM = 384


async def _fill(pool: asyncpg.Pool, bank: str, facts: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    start = datetime(2024, 1, 1, tzinfo=UTC)
    await pool.execute("INSERT INTO banks (id, name) VALUES ($1, $1)", bank)
    batch = 2000
    for lo in range(0, facts, batch):
        n = min(batch, facts - lo)
        ids = [uuid.uuid4() for _ in range(n)]
        vectors = rng.standard_normal((n, DIM)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        entity = uuid.uuid4()
        async with pool.acquire() as conn, conn.transaction():
            await conn.executemany(
                "INSERT INTO messages (id, bank_id, message_id, conversation_id, payload, received_at, processed_at)"
                " VALUES ($1, $2, $3, 'c', $4, $5, $5)",
                [
                    (
                        uuid.uuid4(),
                        bank,
                        f"m{lo + i}",
                        {"content": f"turn {lo + i}"},
                        start + timedelta(minutes=lo + i),
                    )
                    for i in range(n)
                ],
            )
            await conn.executemany(
                "INSERT INTO memory_units (id, bank_id, text, embedding, occurred_start, source_message_ids)"
                " VALUES ($1, $2, $3, $4, $5, $6)",
                [
                    (ids[i], bank, f"Fact number {lo + i} about topic {(lo + i) % 97}.", vectors[i],
                     start + timedelta(minutes=lo + i), [f"m{lo + i}"])
                    for i in range(n)
                ],
            )  # fmt: skip
            await conn.execute(
                "INSERT INTO entities (id, bank_id, canonical_name, mention_count) VALUES ($1, $2, $3, $4)",
                entity,
                bank,
                f"Topic {lo}",
                n,
            )
            await conn.executemany(
                "INSERT INTO unit_entities (unit_id, entity_id, bank_id) VALUES ($1, $2, $3)",
                [(u, entity, bank) for u in ids],
            )
            await conn.executemany(
                "INSERT INTO memory_links (from_id, to_id, link_type, weight, bank_id) VALUES ($1, $2, 'temporal', 0.5, $3)",
                [(ids[i], ids[i + 1], bank) for i in range(n - 1)],
            )


async def _file_body(path: Path) -> AsyncIterator[bytes]:
    with path.open("rb") as source:
        while piece := source.read(1 << 20):
            yield piece


async def _one(pool: asyncpg.Pool, facts: int, work: Path, seed: int) -> dict[str, Any]:
    bank = f"bench-{facts}"
    await _fill(pool, bank, facts, seed)
    dump = work / f"{bank}.jsonl"
    tracemalloc.start()
    clock = time.perf_counter()
    with dump.open("wb") as out:
        async for line in export_lines(pool, bank, embedding_model=MODEL):
            out.write(line)
    export_s = time.perf_counter() - clock
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    lines = sum(1 for _ in dump.open("rb"))
    clock = time.perf_counter()
    result = await import_lines(pool, f"{bank}-copy", _file_body(dump), embedding_model=MODEL)
    import_s = time.perf_counter() - clock
    clock = time.perf_counter()
    again = await import_lines(pool, f"{bank}-copy", _file_body(dump), embedding_model=MODEL)
    again_s = time.perf_counter() - clock
    assert result.complete and result.written.get("fact") == facts, result
    assert sum(again.written.values()) == 0
    return {
        "facts": facts,
        "records": lines,
        "bytes": dump.stat().st_size,
        "export_s": export_s,
        "export_records_per_s": lines / export_s,
        "export_peak_python_mb": peak / 1e6,
        "import_s": import_s,
        "import_records_per_s": lines / import_s,
        "reimport_s": again_s,
    }


async def run(args: argparse.Namespace, data_dir: Path) -> list[dict[str, Any]]:
    postgres = EmbeddedPostgres(data_dir / "pg")
    dsn = postgres.start()
    try:
        await apply_migrations(dsn)
        pool = await create_pool(dsn, max_size=4)
        try:
            await check_embedding_model(pool, MODEL, DIM)
            return [await _one(pool, n, data_dir, args.seed) for n in args.facts]
        finally:
            await pool.close()
    finally:
        postgres.stop()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--facts", type=int, nargs="+", default=[10_000, 50_000], help="bank sizes")
    parser.add_argument("--seed", type=int, default=19)
    parser.add_argument("--json", type=Path, default=None, help="write the results here")
    args = parser.parse_args(argv)
    data_dir = Path(tempfile.mkdtemp(prefix="tempr-transfer-"))
    try:
        rows = asyncio.run(run(args, data_dir))
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)
    print_table(
        "bank export / import (one process, embedded Postgres)",
        ["facts", "records", "MB", "export s", "export rec/s", "export peak MB", "import s", "import rec/s",
         "re-import s"],
        [
            [r["facts"], r["records"], r["bytes"] / 1e6, r["export_s"], r["export_records_per_s"],
             r["export_peak_python_mb"], r["import_s"], r["import_records_per_s"], r["reimport_s"]]
            for r in rows
        ],
    )  # fmt: skip
    write_json(args.json, {"rows": rows, "meta": {"seed": args.seed, "dimension": DIM}})
    console.print(json.dumps({"facts": [r["facts"] for r in rows]}))


if __name__ == "__main__":
    main()
