"""What numpy's BLAS threads cost the worker: link building with OpenBLAS at its default
thread count against one thread, alternating, in one process.

    python -m bench.blas_threads [--builds 60] [--pool 400] [--new 3] [--pause-ms 20] [--json PATH]

The resolver builds one chunk's links against the bank's recent facts (400 kept per bank) and
their neighbours: one product of a few new 384-d vectors by a few hundred stored ones, then
other work (SQL, the next chunk) before the next product. Each build here is followed by a
pause of that length, during which an idle OpenBLAS thread keeps spinning. Reported per
build: wall time, and CPU time of the whole process (the spinning threads included), medians
over the passes.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
from threadpoolctl import threadpool_info, threadpool_limits

from bench.common import print_table, write_json
from tempr.agents.resolution.links import FactPoint, build_links
from tempr.schemas.ids import stable_id

__all__ = ["main"]

DIM = 384
T0 = datetime(2023, 5, 8, 13, 0, tzinfo=UTC)


def _points(rng: random.Random, n: int, prefix: str) -> list[FactPoint]:
    """Facts of one conversation's shape: a few topics (cosines around the 0.7 threshold),
    two speakers in every fact plus a topic entity, spread over three days."""
    np_rng = np.random.default_rng(rng.randrange(2**32))
    topics = np_rng.normal(size=(12, DIM))
    speakers = [stable_id("entity", "caroline"), stable_id("entity", "melanie")]
    entities = [stable_id("entity", f"topic{i}") for i in range(12)]
    out = []
    for i in range(n):
        t = rng.randrange(12)
        vector = topics[t] + np_rng.normal(scale=0.8, size=DIM)
        out.append(
            FactPoint(
                unit_id=stable_id("unit", f"{prefix}{i}"),
                when=T0 + timedelta(minutes=rng.randrange(72 * 60)),
                embedding=vector.astype(np.float32).tolist(),
                entity_ids={speakers[i % 2], entities[t]},
            )
        )
    return out


def _pass(builds: list[tuple[list[FactPoint], list[FactPoint]]], pause: float) -> dict[str, float]:
    walls, cpus = [], []
    for new, existing in builds:
        fresh = [FactPoint(p.unit_id, p.when, p.embedding, p.entity_ids) for p in new]
        cpu, wall = time.process_time(), time.perf_counter()
        build_links(fresh, existing)
        time.sleep(pause)
        walls.append(time.perf_counter() - wall - pause)
        cpus.append(time.process_time() - cpu)
    return {"wall_ms": 1000 * statistics.median(walls), "cpu_ms": 1000 * statistics.median(cpus)}


def measure(args: argparse.Namespace) -> dict[str, Any]:
    rng = random.Random(26)
    recent = _points(rng, args.pool, "recent")
    builds = [(_points(rng, args.new, f"chunk{k}-"), recent) for k in range(args.builds)]
    default = max((p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"), default=1)
    limits: dict[str, int | None] = {f"default ({default} threads)": None, "one thread": 1}
    passes: dict[str, list[dict[str, float]]] = {name: [] for name in limits}
    _pass(builds[:5], args.pause_ms / 1000)  # warm-up: memos, imports
    for _ in range(args.repeats):
        for name, limit in limits.items():
            with threadpool_limits(limits=limit, user_api="blas"):
                passes[name].append(_pass(builds, args.pause_ms / 1000))
    result: dict[str, Any] = {
        "builds": args.builds,
        "pool": args.pool,
        "new": args.new,
        "pause_ms": args.pause_ms,
    }
    for name, runs in passes.items():
        result[name] = {k: statistics.median(r[k] for r in runs) for k in ("wall_ms", "cpu_ms")}
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--builds", type=int, default=60)
    parser.add_argument("--pool", type=int, default=400, help="stored facts each build links against")
    parser.add_argument("--new", type=int, default=3, help="new facts per build (one chunk)")
    parser.add_argument("--pause-ms", type=float, default=20.0, help="other work between builds")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    r = measure(args)
    print_table(
        f"Link building per chunk ({args.new} new facts against {args.pool}), BLAS threads",
        ["BLAS", "wall ms per build", "process CPU ms per build"],
        [[k, v["wall_ms"], v["cpu_ms"]] for k, v in r.items() if isinstance(v, dict)],
    )
    write_json(args.json, r)


if __name__ == "__main__":
    main()
