"""Recall throughput over HTTP: 1, 4 and 16 concurrent clients on a conv-26-size bank, with
one API process and with several (uvicorn workers), side by side in one run.

For each worker count the embedded runtime starts as `tempr up` does (TEMPR_API_WORKERS=W);
a bank of --facts facts made from conv-26's turns (real text, embeddings at cosine ≈ 0.9 of
the real ones: bench/scale_build.py) is loaded into its Postgres with COPY; then each client
recalls conv-26's questions in a loop for --seconds (default preset, budget mid).

    python -m bench.recall_throughput [--runtimes torch,onnx] [--workers 1,2] [--clients 1,4,16]
                                      [--admission 0,4,4,0] [--seconds 20] [--json PATH]

--admission: TEMPR_RECALL_CONCURRENCY values, each on a stack of its own, in the order given
(repeat them, e.g. 0,4,4,0, to alternate).
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import asyncpg
import httpx
from pgvector.asyncpg import register_vector

from bench.common import console, embedded_settings, percentile, print_table, start_supervisor, write_json
from bench.locomo_data import DATA_DIR, load_sample
from bench.scale_build import BankPlan, embed_sources, load_banks, load_sources

BANK = "throughput-conv-26"


async def _load(dsn: str, facts: int, cache: Path) -> None:
    conv26 = load_sources([DATA_DIR / "conv-26.json"])
    vectors = embed_sources(conv26, cache)
    conn = await asyncpg.connect(dsn)
    try:
        await register_vector(conn)
        await load_banks(conn, [BankPlan(BANK, facts)], conv26, vectors, seed=26)
    finally:
        await conn.close()


async def _client(
    client: httpx.AsyncClient, questions: list[str], offset: int, until: float, latencies: list[float]
) -> int:
    errors = 0
    i = offset
    while time.monotonic() < until:
        body = {"query": questions[i % len(questions)], "query_timestamp": "2023-10-20T00:00:00Z"}
        started = time.perf_counter()
        response = await client.post(f"/v1/banks/{BANK}/recall", json=body)
        if response.status_code == 200:
            latencies.append((time.perf_counter() - started) * 1000)
        else:
            errors += 1
        i += 1
    return errors


async def _drive(url: str, questions: list[str], clients: int, seconds: float) -> dict[str, Any]:
    limits = httpx.Limits(max_connections=clients)
    async with httpx.AsyncClient(base_url=url, timeout=60, limits=limits) as client:
        for q in questions[:4]:  # warm-up
            await client.post(f"/v1/banks/{BANK}/recall", json={"query": q})
        latencies: list[float] = []
        started = time.monotonic()
        errors = await asyncio.gather(
            *(_client(client, questions, k * 7, started + seconds, latencies) for k in range(clients))
        )
        elapsed = time.monotonic() - started
    return {
        "clients": clients,
        "requests": len(latencies),
        "errors": sum(errors),
        "req_per_s": len(latencies) / elapsed,
        "p50_ms": percentile(latencies, 50),
        "p95_ms": percentile(latencies, 95),
    }


def run_workers(
    workers: int, runtime: str, admission: int, args: argparse.Namespace, questions: list[str]
) -> list[dict[str, Any]]:
    data_dir = Path(tempfile.mkdtemp(prefix="tempr-throughput-"))
    settings = embedded_settings(
        data_dir,
        api_workers=workers,
        index_maintenance_interval_s=0,
        embedding_runtime=runtime,
        recall_concurrency=admission,
    )
    supervisor = start_supervisor(settings, timeout=900)
    try:
        s = supervisor.settings
        assert s.database_url
        asyncio.run(_load(s.database_url, args.facts, args.cache))
        url = f"http://{s.host}:{s.port}"
        rows = []
        for clients in args.clients:
            row = asyncio.run(_drive(url, questions, clients, args.seconds))
            row |= {"workers": workers, "runtime": runtime, "admission": admission}
            console.print(
                f"[dim]{runtime}, {workers} workers, admission {admission}, {clients} clients: "
                f"{row['req_per_s']:.1f} req/s, p95 {row['p95_ms']:.0f} ms[/dim]"
            )
            rows.append(row)
        return rows
    finally:
        supervisor.stop()
        shutil.rmtree(data_dir, ignore_errors=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--workers", default="1,2", help="API worker counts to compare")
    parser.add_argument(
        "--runtimes",
        default="torch,onnx",
        help="embedding runtimes to compare (torch: before ONNX)",
    )
    parser.add_argument("--clients", default="1,4,16", help="concurrent clients")
    parser.add_argument(
        "--admission", default="0", help="TEMPR_RECALL_CONCURRENCY values, in this order (0: no limit)"
    )
    parser.add_argument("--seconds", type=float, default=20.0, help="per (workers, clients) cell")
    parser.add_argument("--facts", type=int, default=1000, help="facts in the bank (conv-26: ~1,000)")
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "tempr-bench")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    args.clients = [int(c) for c in args.clients.split(",")]
    questions = [q.question for q in load_sample(DATA_DIR / "conv-26.json").questions]
    rows = [
        row
        for rt in args.runtimes.split(",")
        for w in args.workers.split(",")
        for a in args.admission.split(",")
        for row in run_workers(int(w), rt, int(a), args, questions)
    ]
    print_table(
        f"Recall throughput, bank of {args.facts} facts (HTTP, default preset; 2 shared cores, noisy)",
        ["runtime", "workers", "admission", "clients", "req/s", "p50 ms", "p95 ms", "requests", "errors"],
        [
            [
                r["runtime"],
                r["workers"],
                r["admission"],
                r["clients"],
                r["req_per_s"],
                r["p50_ms"],
                r["p95_ms"],
                r["requests"],
                r["errors"],
            ]
            for r in rows
        ],
        digits=1,
    )
    write_json(args.json, {"rows": rows, "meta": {"facts": args.facts, "seconds": args.seconds}})


if __name__ == "__main__":
    main()
