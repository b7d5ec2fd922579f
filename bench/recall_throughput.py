"""Recall throughput over HTTP: 1, 4 and 16 concurrent clients on a conv-26-size bank, with
one API process and with several (uvicorn workers), side by side in one run.

For each worker count the embedded runtime starts as `tempr up` does (TEMPR_API_WORKERS=W);
a bank of --facts facts made from conv-26's turns (real text, embeddings at cosine ≈ 0.9 of
the real ones: bench/scale_build.py) is loaded into its Postgres with COPY; then each client
recalls conv-26's questions in a loop for --seconds (default preset, budget mid).

--bank conv-26 ingests the conversation through the whole pipeline instead (facts, links,
entities, passage turns): the bank a user has, which recall reads more of per candidate.

    python -m bench.recall_throughput [--bank synthetic|conv-26] [--runtimes torch,onnx]
                                      [--workers 1,2] [--clients 1,4,16] [--admission 0,4,4,0]
                                      [--client httpx,aiohttp] [--rates 0,32.5]
                                      [--presets default,no-passage]
                                      [--seconds 20] [--json PATH]

--rates: 0 runs each client in a closed loop (the most the server does, and the latency at
that load); a rate R > 0 offers Poisson arrivals of R recalls per second, served by the same
clients, each recall timed from when it was due (the latency at a given throughput).

Each cell also reports the CPU each process spent per recall (the API, Postgres, the worker,
the broker, and this bench's own client), and the floor Little's law puts under the mean latency
of a closed loop of N clients if the machine's every core served recalls alone.

--admission: TEMPR_RECALL_CONCURRENCY values, each on a stack of its own, in the order given
(repeat them, e.g. 0,4,4,0, to alternate).
"""

from __future__ import annotations

import argparse
import asyncio
import math
import random
import shutil
import statistics
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
import asyncpg
import httpx
import psutil
from pgvector.asyncpg import register_vector

from bench.common import (
    console,
    embedded_settings,
    percentile,
    print_table,
    retain_items,
    start_supervisor,
    wait_until_materialized,
    write_json,
)
from bench.cpu_meter import CpuMeter
from bench.locomo_data import DATA_DIR, load_sample
from bench.scale_build import BankPlan, embed_sources, load_banks, load_sources

BANK = "throughput-conv-26"
REAL_BANK = "conv-26"


async def _load(dsn: str, facts: int, cache: Path) -> None:
    conv26 = load_sources([DATA_DIR / "conv-26.json"])
    vectors = embed_sources(conv26, cache)
    conn = await asyncpg.connect(dsn)
    try:
        await register_vector(conn)
        await load_banks(conn, [BankPlan(BANK, facts)], conv26, vectors, seed=26)
    finally:
        await conn.close()


def _ingest(url: str) -> None:
    """conv-26 through the whole pipeline (retain, extract, resolve, materialize), as a user's
    bank is made: its facts, links, entities and the passage turns recall reads back."""
    sample = load_sample(DATA_DIR / "conv-26.json")
    items = [item.model_dump(mode="json", exclude_defaults=True) for item in sample.items]
    with httpx.Client(base_url=url, timeout=120) as client:
        retain_items(client, REAL_BANK, items)
        wait_until_materialized(client, timeout=1800)


def _recall_body(questions: list[str], i: int, preset: str = "default") -> dict[str, Any]:
    """The i-th recall of a loop over the questions, asked as of conv-26's last session."""
    return {
        "query": questions[i % len(questions)],
        "query_timestamp": "2023-10-20T00:00:00Z",
        "preset": preset,
    }


async def _client(
    post: Poster,
    bank: str,
    questions: list[str],
    offset: int,
    until: float,
    latencies: list[float],
    preset: str = "default",
) -> int:
    errors = 0
    i = offset
    while time.monotonic() < until:
        body = _recall_body(questions, i, preset)
        started = time.perf_counter()
        if await post(f"/v1/banks/{bank}/recall", body) == 200:
            latencies.append((time.perf_counter() - started) * 1000)
        else:
            errors += 1
        i += 1
    return errors


async def _paced_client(
    post: Poster,
    bank: str,
    questions: list[str],
    arrivals: Iterator[tuple[int, float]],
    latencies: list[float],
    preset: str = "default",
) -> int:
    """One of N connections serving a shared schedule of arrivals: each recall is timed from
    when it was due, so a recall that waited for a free connection counts its wait (no
    coordinated omission)."""
    errors = 0
    for i, due in arrivals:
        delay = due - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        body = _recall_body(questions, i, preset)
        if await post(f"/v1/banks/{bank}/recall", body) == 200:
            latencies.append((time.perf_counter() - due) * 1000)
        else:
            errors += 1
    return errors


def poisson_arrivals(rate: float, seconds: float, start: float, seed: int = 16) -> list[float]:
    """Arrival times of a Poisson process of ``rate`` per second over ``seconds`` from
    ``start``: users' recalls arrive independently of each other, not on a beat."""
    rng = random.Random(seed)
    times, t = [], 0.0
    while True:
        t += rng.expovariate(rate)
        if t >= seconds:
            return times
        times.append(start + t)


Poster = Callable[[str, dict[str, Any]], Awaitable[int]]


@asynccontextmanager
async def _poster(kind: str, url: str, clients: int) -> AsyncIterator[Poster]:
    """POST a JSON body and read the whole response, returning its status. httpx is what the
    other benches use; aiohttp costs the load generator less CPU per request, and on two
    cores whatever the client spends the server cannot."""
    if kind == "aiohttp":
        connector = aiohttp.TCPConnector(limit=clients)
        async with aiohttp.ClientSession(
            base_url=url, connector=connector, timeout=aiohttp.ClientTimeout(total=60)
        ) as session:

            async def post_aiohttp(path: str, body: dict[str, Any]) -> int:
                async with session.post(path, json=body) as response:
                    await response.read()
                    return response.status

            yield post_aiohttp
        return
    limits = httpx.Limits(max_connections=clients)
    async with httpx.AsyncClient(base_url=url, timeout=60, limits=limits) as client:

        async def post_httpx(path: str, body: dict[str, Any]) -> int:
            return (await client.post(path, json=body)).status_code

        yield post_httpx


async def _drive(
    url: str,
    bank: str,
    questions: list[str],
    clients: int,
    seconds: float,
    kind: str,
    meter: CpuMeter,
    rate: float = 0.0,
    preset: str = "default",
) -> dict[str, Any]:
    """``clients`` connections, each recalling in a closed loop, or with ``rate`` > 0 serving
    Poisson arrivals at that many recalls per second between them."""
    async with _poster(kind, url, clients) as post:
        for i in range(4):  # warm-up
            await post(f"/v1/banks/{bank}/recall", _recall_body(questions, i, preset))
        latencies: list[float] = []
        meter.begin()
        started = time.monotonic()
        if rate > 0:
            arrivals = iter(enumerate(poisson_arrivals(rate, seconds, time.perf_counter())))
            loops = [
                _paced_client(post, bank, questions, arrivals, latencies, preset) for _ in range(clients)
            ]
        else:
            loops = [
                _client(post, bank, questions, k * 7, started + seconds, latencies, preset)
                for k in range(clients)
            ]
        errors = await asyncio.gather(*loops)
        elapsed = time.monotonic() - started
        cpu = meter.end()
    requests = max(len(latencies), 1)
    cpu_ms = {name: 1000 * v / requests for name, v in cpu.items()}
    server_ms = sum(v for name, v in cpu_ms.items() if name != "bench")
    return {
        "preset": preset,
        "clients": clients,
        "client": kind,
        "offered_per_s": rate or None,
        "requests": len(latencies),
        "errors": sum(errors),
        "req_per_s": len(latencies) / elapsed,
        "p50_ms": percentile(latencies, 50),
        "mean_ms": statistics.fmean(latencies) if latencies else math.nan,
        "p95_ms": percentile(latencies, 95),
        "cpu_ms_per_recall": cpu_ms,
        "busy_cores": sum(cpu.values()) / elapsed,
        # Little's law for a closed loop: with every core of the machine on the server alone,
        # the rate is at most cores / server CPU per recall, so the mean latency is at least
        # clients / that rate.
        "mean_floor_ms": None if rate > 0 else clients * server_ms / (psutil.cpu_count() or 1),
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
        url = f"http://{s.host}:{s.port}"
        if args.bank == "conv-26":
            _ingest(url)
        else:
            asyncio.run(_load(s.database_url, args.facts, args.cache))
        bank = REAL_BANK if args.bank == "conv-26" else BANK
        rows = []
        cells = [
            (c, r, k, p)
            for c in args.clients
            for r in args.rates
            for k in args.client.split(",")
            for p in args.presets.split(",")
        ]
        for clients, rate, kind, preset in cells:
            meter = CpuMeter(supervisor, include_self=True)
            row = asyncio.run(_drive(url, bank, questions, clients, args.seconds, kind, meter, rate, preset))
            row |= {"workers": workers, "runtime": runtime, "admission": admission}
            cpu = ", ".join(f"{k} {v:.1f}" for k, v in row["cpu_ms_per_recall"].items())
            console.print(
                f"[dim]{preset}, {runtime}, {workers} workers, admission {admission}, {clients} {kind} clients, "
                f"{f'{rate:g}/s offered' if rate else 'closed loop'}: "
                f"{row['req_per_s']:.1f} req/s, p95 {row['p95_ms']:.0f} ms; CPU ms per recall: {cpu}[/dim]"
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
    parser.add_argument(
        "--client",
        default="httpx",
        help="the load generator's HTTP client, httpx or aiohttp; both (httpx,aiohttp) alternate per cell",
    )
    parser.add_argument(
        "--rates",
        default="0",
        help="0: each client recalls in a closed loop; R > 0: Poisson arrivals of R recalls/s served by the clients",
    )
    parser.add_argument(
        "--presets",
        default="default",
        help="recall presets, alternated per cell in the order given (repeat to alternate: a,b,b,a)",
    )
    parser.add_argument("--seconds", type=float, default=20.0, help="per (workers, clients) cell")
    parser.add_argument(
        "--bank",
        choices=("synthetic", "conv-26"),
        default="synthetic",
        help="synthetic: --facts facts loaded with COPY; conv-26: the conversation ingested through the pipeline",
    )
    parser.add_argument("--facts", type=int, default=1000, help="facts in the bank (conv-26: ~1,000)")
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "tempr-bench")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    args.clients = [int(c) for c in args.clients.split(",")]
    args.rates = [float(r) for r in args.rates.split(",")]
    questions = [q.question for q in load_sample(DATA_DIR / "conv-26.json").questions]
    rows = [
        row
        for rt in args.runtimes.split(",")
        for w in args.workers.split(",")
        for a in args.admission.split(",")
        for row in run_workers(int(w), rt, int(a), args, questions)
    ]
    print_table(
        f"Recall throughput, {'conv-26 ingested' if args.bank == 'conv-26' else f'bank of {args.facts} facts'}"
        " (HTTP, budget mid; 2 shared cores, noisy)",
        [
            "preset",
            "runtime",
            "workers",
            "admission",
            "clients",
            "offered/s",
            "client",
            "req/s",
            "p50 ms",
            "mean ms",
            "p95 ms",
            "server CPU ms/recall",
            "client CPU ms/recall",
            "mean floor ms",
            "errors",
        ],
        [
            [
                r["preset"],
                r["runtime"],
                r["workers"],
                r["admission"],
                r["clients"],
                r["offered_per_s"] or "closed",
                r["client"],
                r["req_per_s"],
                r["p50_ms"],
                r["mean_ms"],
                r["p95_ms"],
                sum(v for k, v in r["cpu_ms_per_recall"].items() if k != "bench"),
                r["cpu_ms_per_recall"].get("bench", math.nan),
                r["mean_floor_ms"],
                r["errors"],
            ]
            for r in rows
        ],
        digits=1,
    )
    write_json(
        args.json,
        {
            "rows": rows,
            "meta": {
                "bank": args.bank,
                "facts": args.facts,
                "seconds": args.seconds,
                "cores": psutil.cpu_count(),
            },
        },
    )


if __name__ == "__main__":
    main()
