"""Ingest rate: one LoCoMo conversation end to end through the real stack, against the raw
embedding rate of the same facts with the same model, measured in the same run.

    python -m bench.ingest_rate [--conversation conv-26] [--json PATH]
        [--digest PATH] [--compare PATH] [--profile PATH | --timeline PATH]

The embedded runtime (`tempr up`'s Supervisor: Postgres+pgvector, Tansu, worker, API) starts in
a temporary directory; a two-turn bank warms the worker up (spaCy and the model load lazily).
Then every turn is retained (batches of 200) and timed until nothing is pending: turns/s and
facts/s (facts stored). The worker then idles, and this process embeds the stored facts' texts,
exactly as the extractor embeds them, with the same model and batch size: the raw rate. The
ratio of the two is the figure the scale issue targets (≥ 80 %).

Also reported: CPU seconds per fact of the worker, the API, the broker and Postgres during the ingest, SQL
statements per fact (pg_stat_statements is not loaded; the count is from pg_stat_database's
transactions and the tuples written), and bytes per fact and per link in the tables.

`--digest` writes the bank's facts (id, text) and links (ends, type, weight) to a file;
`--compare` checks them against such a file from an earlier run: the guard that a change of
the pipeline's speed left what it extracts unchanged. `--profile` records the worker with
py-spy (collapsed stacks, `--idle` included) for a breakdown; `--timeline` records it as a timeline
instead (bench/profile_timeline.py): how much of the ingest the model thread was busy, and how
long the pipeline ran before its first and after its last embedding.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import asyncpg
import httpx

from bench.common import (
    console,
    embedded_settings,
    print_table,
    retain_items,
    start_supervisor,
    wait_until_materialized,
    write_json,
)
from bench.cpu_meter import CpuMeter
from bench.locomo_data import DATA_DIR, load_sample
from bench.pg_activity import PgActivity
from bench.profile_stacks import breakdown
from bench.profile_timeline import timeline
from tempr.agents.extract_facts import dated_text

__all__ = ["digest_diff", "main"]


async def _db_stats(url: str) -> dict[str, int]:
    conn = await asyncpg.connect(url)
    try:
        row = await conn.fetchrow(
            """SELECT xact_commit + xact_rollback AS xacts, tup_inserted + tup_updated + tup_deleted AS writes,
                      tup_returned + tup_fetched AS reads
               FROM pg_stat_database WHERE datname = current_database()"""
        )
        return dict(row)
    finally:
        await conn.close()


async def _bank_contents(url: str, bank: str) -> dict[str, Any]:
    conn = await asyncpg.connect(url)
    try:
        facts = await conn.fetch(
            "SELECT id, text, occurred_start, mentioned_at FROM memory_units WHERE bank_id = $1 ORDER BY id",
            bank,
        )
        links = await conn.fetch(
            """SELECT from_id, to_id, link_type, weight FROM memory_links WHERE bank_id = $1
               ORDER BY from_id, to_id, link_type""",
            bank,
        )
        sizes = await conn.fetchrow(
            """SELECT pg_total_relation_size('memory_units') AS units_bytes,
                      pg_total_relation_size('memory_links') AS links_bytes,
                      pg_total_relation_size('unit_entities') AS mentions_bytes,
                      pg_total_relation_size('entities') AS entities_bytes,
                      (SELECT count(*) FROM memory_units) AS all_units,
                      (SELECT count(*) FROM memory_links) AS all_links"""
        )
        entities = await conn.fetchval("SELECT count(*) FROM entities WHERE bank_id = $1", bank)
        return {"facts": facts, "links": links, "sizes": dict(sizes), "entities": entities}
    finally:
        await conn.close()


def _digest(contents: dict[str, Any]) -> dict[str, Any]:
    return {
        "facts": [[str(r["id"]), r["text"]] for r in contents["facts"]],
        "links": [
            [str(r["from_id"]), str(r["to_id"]), r["link_type"], round(float(r["weight"]), 4)]
            for r in contents["links"]
        ],
    }


def digest_diff(before: dict[str, Any], after: dict[str, Any]) -> dict[str, int]:
    """How the facts and links of two digests differ (0 everywhere: the same sets)."""
    out: dict[str, int] = {}
    for kind in ("facts", "links"):
        old = {tuple(x) for x in before[kind]}
        new = {tuple(x) for x in after[kind]}
        out[f"{kind}_missing"] = len(old - new)
        out[f"{kind}_extra"] = len(new - old)
    old_pairs = {tuple(x[:3]) for x in before["links"]}
    new_pairs = {tuple(x[:3]) for x in after["links"]}
    out["link_pairs_missing"] = len(old_pairs - new_pairs)
    out["link_pairs_extra"] = len(new_pairs - old_pairs)
    return out


def raw_embedding_rate(texts: list[str], batch_size: int, repeats: int) -> dict[str, Any]:
    """The model alone on the same texts, with one thread and with one per core (passes
    alternate, so both see the same load): the better median facts/s is the reference.

    Each thread count gets its own embedder: the ONNX Runtime session takes its thread count
    when it is built, so setting torch's threads between passes (as this did before stop 18)
    changed nothing and both passes ran the session at torch's default, one thread per core."""
    import torch

    from tempr.inference.embeddings import LocalEmbedder
    from tempr.settings import PACKAGED_EMBEDDING_MODEL

    default = torch.get_num_threads()
    embedders = {}
    for threads in sorted({1, default}):
        torch.set_num_threads(threads)
        embedders[threads] = LocalEmbedder(PACKAGED_EMBEDDING_MODEL, batch_size=batch_size)
        embedders[threads].encode(texts[:batch_size])  # warm-up
    rates: dict[int, list[float]] = {n: [] for n in embedders}
    for _ in range(repeats):
        for threads, passes in rates.items():
            torch.set_num_threads(threads)
            started = time.perf_counter()
            embedders[threads].encode(texts)
            passes.append(len(texts) / (time.perf_counter() - started))
    torch.set_num_threads(default)
    medians = {n: statistics.median(p) for n, p in rates.items()}
    best = max(medians, key=lambda n: medians[n])
    return {
        "facts_per_s": medians[best],
        "threads": best,
        "runtime": embedders[best].runtime,
        "by_threads": medians,
        "passes": rates,
    }


def _start_profile(pid: int, path: Path, fmt: str = "raw") -> subprocess.Popen[bytes] | None:
    exe = shutil.which("py-spy")
    if exe is None:
        console.print("[yellow]py-spy not installed (pip install py-spy): no profile[/yellow]")
        return None
    return subprocess.Popen(
        [exe, "record", "--pid", str(pid), "--rate", "50", "--idle", "--threads", "--format", fmt,
         "--output", str(path), "--nonblocking"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip


def _stop_profile(proc: subprocess.Popen[bytes] | None) -> None:
    if proc is None:
        return
    proc.send_signal(2)  # py-spy writes its output on SIGINT
    try:
        proc.wait(60)
    except subprocess.TimeoutExpired:
        proc.kill()


def measure(args: argparse.Namespace) -> dict[str, Any]:
    sample = load_sample(args.data / f"{args.conversation}.json")
    items = [item.model_dump(mode="json", exclude_defaults=True) for item in sample.items]
    data_dir = Path(tempfile.mkdtemp(prefix="tempr-ingest-"))
    supervisor = start_supervisor(embedded_settings(data_dir))
    profile = None
    activity: PgActivity | None = None
    try:
        s = supervisor.settings
        assert s.database_url
        with httpx.Client(base_url=f"http://{s.host}:{s.port}", timeout=120) as client:
            retain_items(client, "ingest-warmup", items[:2])
            wait_until_materialized(client, timeout=600)
            meter = CpuMeter(supervisor)
            db_before = asyncio.run(_db_stats(s.database_url))
            if args.profile or args.timeline:
                worker = next(c for c in supervisor.children if c.name == "worker")
                assert worker.proc is not None
                profile = _start_profile(
                    worker.proc.pid, args.profile or args.timeline, "raw" if args.profile else "speedscope"
                )
            meter.begin()
            with PgActivity(s.database_url) if args.pg_activity else contextlib.nullcontext() as activity:
                started = time.perf_counter()
                retain_items(client, sample.bank, items)
                posted = time.perf_counter() - started
                wait_until_materialized(client, timeout=3600)
                seconds = time.perf_counter() - started
            cpu = meter.end()
            _stop_profile(profile)
            profile = None
            db_after = asyncio.run(_db_stats(s.database_url))
        contents = asyncio.run(_bank_contents(s.database_url, sample.bank))
        facts = contents["facts"]
        texts = [dated_text(r["text"], r["occurred_start"] or r["mentioned_at"]) for r in facts]
        raw = raw_embedding_rate(texts, s.embedding_batch_size, args.repeats)
    finally:
        _stop_profile(profile)
        supervisor.stop()
        shutil.rmtree(data_dir, ignore_errors=True)
    n_facts, n_links = len(facts), len(contents["links"])
    sizes = contents["sizes"]
    result: dict[str, Any] = {
        "conversation": args.conversation,
        "turns": len(items),
        "facts": n_facts,
        "links": n_links,
        "entities": contents["entities"],
        "post_seconds": posted,
        "seconds": seconds,
        "turns_per_s": len(items) / seconds,
        "facts_per_s": n_facts / seconds,
        "raw_embedding": raw,
        "ratio": (n_facts / seconds) / raw["facts_per_s"],
        # The same figure against the model alone at the worker's thread count, reported beside
        # the reference, not instead.
        "worker_threads": s.worker_embedding_threads(),
        "ratio_at_worker_threads": (n_facts / seconds)
        / raw["by_threads"].get(s.worker_embedding_threads(), raw["facts_per_s"]),
        "cpu_seconds": cpu,
        "cpu_ms_per_fact": {k: 1000 * v / n_facts for k, v in cpu.items()},
        "db": {k: db_after[k] - db_before[k] for k in db_before},
        "bytes_per_fact": (sizes["units_bytes"] + sizes["mentions_bytes"]) / max(sizes["all_units"], 1),
        "bytes_per_link": sizes["links_bytes"] / max(sizes["all_links"], 1),
        "table_bytes": sizes,
    }
    result["db_per_fact"] = {k: v / n_facts for k, v in result["db"].items()}
    digest = _digest(contents)
    if args.digest:
        args.digest.write_text(json.dumps(digest) + "\n")
        console.print(f"wrote {args.digest}")
    if args.profile and args.profile.exists():
        result["profile"] = breakdown(args.profile)
    if args.timeline and args.timeline.exists():
        line = result["timeline"] = timeline(args.timeline)
        # The ratio, taken apart: how fast the model embedded while it ran inside the worker
        # (against the model alone at the worker's thread count), and how much of the ingest
        # it ran.
        busy_s = line["model_busy"] * line["seconds"]
        line["model_facts_per_s_while_busy"] = n_facts / busy_s if busy_s else 0.0
        alone = raw["by_threads"].get(result["worker_threads"], raw["facts_per_s"])
        line["model_in_worker_vs_alone_same_threads"] = line["model_facts_per_s_while_busy"] / alone
    if activity is not None:
        result["pg_activity"] = activity.summary()
    if args.compare:
        result["compare"] = digest_diff(json.loads(args.compare.read_text()), digest)
    return result


def report(r: dict[str, Any]) -> None:
    print_table(
        f"Ingest of {r['conversation']} end to end vs the embedding model alone (same run)",
        ["what", "value"],
        [
            ["turns", r["turns"]],
            ["facts stored", r["facts"]],
            ["links stored", r["links"]],
            ["seconds (retain → all materialized)", r["seconds"]],
            ["turns/s", r["turns_per_s"]],
            ["facts/s end to end", r["facts_per_s"]],
            [f"facts/s raw embedding ({r['raw_embedding']['threads']} threads, the reference)",
             r["raw_embedding"]["facts_per_s"]],
            *[[f"  raw, {n} thread(s)", v] for n, v in r["raw_embedding"]["by_threads"].items()],
            ["ratio (target ≥ 0.80)", r["ratio"]],
            [f"ratio to the model at the worker's {r['worker_threads']} thread(s)",
             r["ratio_at_worker_threads"]],
            *[[f"CPU ms per fact, {k}", v] for k, v in r["cpu_ms_per_fact"].items()],
            *[[f"DB {k} per fact", v] for k, v in r["db_per_fact"].items()],
            ["bytes per fact (units + mentions, with indexes)", r["bytes_per_fact"]],
            ["bytes per link (with indexes)", r["bytes_per_link"]],
            *[[f"vs digest: {k}", v] for k, v in r.get("compare", {}).items()],
            *[[f"worker profile: {k}", f"{v:.1%}"] for k, v in r.get("profile", {}).items()],
            *[[f"Postgres: {k}", round(v, 3)] for k, v in r.get("pg_activity", {}).items()
              if isinstance(v, float)],
            *[[f"worker timeline: {k}", round(v, 3)] for k, v in r.get("timeline", {}).items()
              if isinstance(v, float)],
        ],
    )  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--conversation", default="conv-26")
    parser.add_argument("--data", type=Path, default=DATA_DIR)
    parser.add_argument("--repeats", type=int, default=3, help="passes of the raw embedding")
    parser.add_argument("--json", type=Path, help="write the figures here")
    parser.add_argument("--digest", type=Path, help="write the bank's facts and links here")
    parser.add_argument("--compare", type=Path, help="compare the facts and links with this digest")
    recording = parser.add_mutually_exclusive_group()
    recording.add_argument("--profile", type=Path, help="py-spy collapsed stacks of the worker")
    recording.add_argument(
        "--timeline", type=Path, help="py-spy timeline of the worker (speedscope): is the model busy?"
    )
    parser.add_argument(
        "--pg-activity", action="store_true", help="sample pg_stat_activity during the ingest (lock waits)"
    )
    args = parser.parse_args(argv)
    result = measure(args)
    report(result)
    write_json(args.json, result)


if __name__ == "__main__":
    main()
