"""Recall throughput in one process, before and after this stop's speed-ups, interleaved.

`bench.recall_throughput` runs whole stacks one after the other, and on a shared machine the
load moves more between two runs than the change being measured. Here one process, one pool
and one bank (conv-26-size, as there) serve --clients concurrent recall loops (the API's
pipeline without HTTP) in alternating phases of --seconds. --compare runtime (stop 14):
"before" embeds with torch and lets the garbage collector walk every object; "after" embeds
with ONNX Runtime and has the start-up objects frozen (recall_api/main.py). --compare arms
(stop 15, the default): both ONNX and frozen; "before" starts every arm after the query
embedding, "after" runs the keyword arm during it. Phases alternate --rounds times; the medians
of the phases' req/s and latency percentiles are reported.

    python -m bench.recall_concurrency [--compare arms|runtime] [--clients 16] [--seconds 10]
                                       [--rounds 3] [--json PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import shutil
import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.common import console, percentile, print_table, write_json
from bench.locomo_data import DATA_DIR, load_sample
from bench.recall_throughput import BANK, _load
from tempr.inference.embeddings import Embedder, get_embedder
from tempr.inference.tokens import get_encoding
from tempr.recall_api.recall.pipeline import run_recall
from tempr.schemas.recall import RecallRequest
from tempr.settings import PACKAGED_EMBEDDING_MODEL
from tempr.store.migrate import apply_migrations
from tempr.store.pool import create_pool
from tempr.streams.embedded import EmbeddedPostgres

NOW = datetime(2023, 10, 20, tzinfo=UTC)


async def _phase(
    pool: Any, embedder: Embedder, questions: list[str], clients: int, seconds: float, early: bool = True
) -> dict[str, float]:
    latencies: list[float] = []
    until = time.monotonic() + seconds

    async def loop(offset: int) -> None:
        i = offset
        while time.monotonic() < until:
            req = RecallRequest(query=questions[i % len(questions)], query_timestamp=NOW)
            started = time.perf_counter()
            await run_recall(pool, embedder, None, BANK, req, max_consistency_wait_s=0, early_arms=early)
            latencies.append((time.perf_counter() - started) * 1000)
            i += 1

    started = time.monotonic()
    await asyncio.gather(*(loop(k * 7) for k in range(clients)))
    elapsed = time.monotonic() - started
    return {
        "req_per_s": len(latencies) / elapsed,
        "p50_ms": percentile(latencies, 50),
        "p95_ms": percentile(latencies, 95),
        "max_ms": max(latencies),
    }


async def run(args: argparse.Namespace, data_dir: Path) -> dict[str, Any]:
    postgres = EmbeddedPostgres(data_dir / "pg")
    dsn = postgres.start()
    try:
        await apply_migrations(dsn)
        await _load(dsn, args.facts, args.cache)
        pool = await create_pool(dsn, max_size=10)  # the API's pool size
        kept = await create_pool(dsn, max_size=10, reset_sessions=False)
        pools = {"before": pool, "after": kept if args.compare == "reset" else pool}
        try:
            onnx = get_embedder(PACKAGED_EMBEDDING_MODEL, runtime="onnx")
            # name -> (embedder, gc frozen, keyword arm started during the embedding)
            variants: dict[str, tuple[Embedder, bool, bool]] = (
                {
                    "before": (get_embedder(PACKAGED_EMBEDDING_MODEL, runtime="torch"), False, False),
                    "after": (onnx, True, False),
                }
                if args.compare == "runtime"
                else {"before": (onnx, True, True), "after": (onnx, True, True)}
                if args.compare == "reset"
                else {"before": (onnx, True, False), "after": (onnx, True, True)}
            )
            get_encoding()
            questions = [q.question for q in load_sample(DATA_DIR / "conv-26.json").questions]
            for name, (embedder, *_) in variants.items():  # warm-up: plans, caches
                await _phase(pools[name], embedder, questions, 2, 2.0)
            phases: dict[str, list[dict[str, float]]] = {k: [] for k in variants}
            for r in range(args.rounds):
                order = list(variants.items())  # ABBA: neither variant always runs second
                for name, (embedder, frozen, early) in order if r % 2 == 0 else order[::-1]:
                    gc.collect()
                    if frozen:
                        gc.freeze()
                    phases[name].append(
                        await _phase(pools[name], embedder, questions, args.clients, args.seconds, early)
                    )
                    gc.unfreeze()
                    console.print(
                        f"[dim]round {r + 1} {name}: {phases[name][-1]['req_per_s']:.1f} req/s[/dim]"
                    )
            return {
                name: {k: statistics.median(p[k] for p in runs) for k in runs[0]} | {"phases": runs}
                for name, runs in phases.items()
            }
        finally:
            await pool.close()
            await kept.close()
    finally:
        postgres.stop()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=10.0, help="per phase")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--facts", type=int, default=1000, help="facts in the bank (conv-26: ~1,000)")
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "tempr-bench")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument(
        "--compare",
        choices=["runtime", "arms", "reset"],
        default="arms",
        help="runtime: torch without gc.freeze vs ONNX with it (stop 14); arms: every arm after "
        "the query embedding vs the keyword arm during it (stop 15); reset: asyncpg's session reset "
        "on every release vs none (stop 16)",
    )
    args = parser.parse_args(argv)
    data_dir = Path(tempfile.mkdtemp(prefix="tempr-concurrency-"))
    try:
        report = asyncio.run(run(args, data_dir))
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)
    print_table(
        f"Recall, {args.clients} concurrent loops in one process, {args.facts}-fact bank, phases of "
        f"{args.seconds:g} s alternated {args.rounds}x (medians; 2 shared cores, noisy)",
        ["", "req/s", "p50 ms", "p95 ms", "max ms"],
        [[k, r["req_per_s"], r["p50_ms"], r["p95_ms"], r["max_ms"]] for k, r in report.items()],
        digits=1,
    )
    write_json(args.json, report | {"meta": vars(args) | {"cache": str(args.cache), "json": str(args.json)}})


if __name__ == "__main__":
    main()
