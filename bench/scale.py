"""Recall at scale: banks of 100 to 100k facts in one table of many banks (issue 16).

Builds the banks reproducibly (seeded; how the facts are made: bench/scale_build.py) into a
throwaway embedded Postgres, runs the maintenance step (per-bank HNSW indexes and keyword
statistics for banks of at least --index-min-facts), then recalls LoCoMo questions against
each measured bank in this process (the API's pipeline without HTTP: run_recall, default
preset, budget mid, trace on) and prints, per bank size: recall p50/p95, the median of each
stage and arm, the semantic arm's top-50 overlap with an exact scan (mean, min), the same for
the graph arm's seeds (top 20) and ingest's neighbours (top 10 of a fact's copy), the 5 slowest
recalls with their stages, and the bounded keyword searches (stop 15's cut, MaxScore at k 50
and 300, each also without the bank's own GIN index) against scoring every match. Variants
(embedding runtime, arms early or late, --presets) are alternated question by question. Also:
build times, table and index sizes per fact and per link, and /stats before (count(*) over
links) and after (counters). A kept --data-dir gets the maintenance step first (statistics of
older code are recounted).

    python -m bench.scale [--total 1000000] [--min-banks 1000] [--queries 40] [--json PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import shutil
import statistics
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import asyncpg
import numpy as np

from bench.common import console, percentile, print_table, write_json
from bench.locomo_data import conversation_paths, load_sample
from bench.scale_build import bank_plan, embed_sources, load_banks, load_sources
from tempr.inference.embeddings import Embedder, get_embedder
from tempr.recall_api.index_maintenance import maintain_once
from tempr.recall_api.recall.arms.keyword import keyword_or_query
from tempr.recall_api.recall.config import budget_to_limit, get_preset
from tempr.recall_api.recall.pipeline import run_recall
from tempr.schemas.recall import RecallRequest
from tempr.settings import PACKAGED_EMBEDDING_MODEL, Settings
from tempr.store import keyword_bound
from tempr.store import recall as sql
from tempr.store.bank_stats import bank_stats
from tempr.store.graph_context import semantic_neighbours_of_many
from tempr.store.keyword_stats import query_lexemes
from tempr.store.migrate import apply_migrations
from tempr.store.pool import create_pool
from tempr.streams.embedded import EmbeddedPostgres
from tempr.streams.heap import freeze_start_up_heap

MEASURED = (100, 1_000, 10_000, 50_000, 100_000)
_ANY = sql.RecallFilters()


def _overlap(found: Sequence[Any], exact: Sequence[Any]) -> float:
    return len(set(found) & set(exact)) / len(exact) if exact else 1.0


async def _quality(
    pool: asyncpg.Pool, bank: str, indexed: bool, vectors: np.ndarray, fact_vectors: np.ndarray
) -> dict[str, list[float]]:
    """Top-k overlaps of what recall and ingest look up against exact scans."""
    limit = budget_to_limit("mid")
    cfg = get_preset("default")
    ef = min(max(limit, cfg.ef_search_min), cfg.ef_search_max)
    out: dict[str, list[float]] = {"semantic": [], "seeds": [], "neighbours": []}
    async with pool.acquire() as conn:
        for vec in vectors:

            async def top(k: int, exact: bool, v: np.ndarray = vec) -> list[Any]:
                rows = await sql.semantic_search(
                    conn, bank, v, limit=k, min_similarity=-1.0, filters=_ANY, exact=exact, ef_search=ef
                )
                return [r["id"] for r in rows]

            exact50 = await top(50, True)
            out["semantic"].append(_overlap((await top(limit, not indexed))[:50], exact50))
            out["seeds"].append(_overlap(await top(cfg.graph_seed_count, not indexed), exact50[:20]))
        for vec in fact_vectors:  # a new fact close to stored ones, as ingest sees it
            rows = await semantic_neighbours_of_many(conn, bank, [vec], min_cosine=-1.0, limit=10)
            found = [r["id"] for r in rows]
            exact = await sql.semantic_search(
                conn, bank, vec, limit=10, min_similarity=-1.0, filters=_ANY, exact=True, ef_search=ef
            )
            out["neighbours"].append(_overlap(found, [r["id"] for r in exact]))
    return out


async def _keyword_overlap(
    pool: asyncpg.Pool, bank: str, size: int, questions: Sequence[str], caps: Sequence[int]
) -> dict[int, dict[str, Any]]:
    """Per candidate cap, the bounded keyword arm's top k against scoring every match, with
    each query's OR-text, so the worst can be looked at, and each search's median and p95 time
    (the lexeme lookup included): the stop-15 cut (rarest terms only, top 50) against unbounded
    BM25 with query-time statistics, and the MaxScore search (store/keyword_bound.py) at k = 50
    and at recall's k (budget mid) against the same scoring over every matching fact."""
    cfg = get_preset("default")
    deep = budget_to_limit("mid")
    out: dict[int, dict[str, Any]] = {}
    async with pool.acquire() as conn:
        gin = await conn.fetchval("SELECT index_name FROM bank_keyword_indexes WHERE bank_id = $1", bank)
        full: dict[str, list[Any]] = {}
        exact: dict[str, dict[int, list[Any]]] = {}
        for q in questions:
            text = keyword_or_query(q, cfg.keyword_max_terms)
            if not text:
                continue
            rows = await sql.keyword_search(conn, bank, text, limit=50, filters=_ANY, bank_size=size)
            full[text] = [r["id"] for r in rows]
            terms, avg_length = await keyword_bound.term_stats(conn, bank, text, sql.KeywordPrior())
            assert avg_length is not None, "keyword statistics without lengths: run the maintenance step"
            every = await keyword_bound.exhaustive_search(
                conn, bank, terms, avg_length, bank_size=size, limit=deep, filters=_ANY
            )
            exact[text] = {50: [h.id for h in every[:50]], deep: [h.id for h in every]}
        for cap in caps:
            runs: dict[str, list[tuple[float, float, str, int, bool]]] = {}
            for text, ref in full.items():
                for shared in (False, True) if gin else (False,):
                    # The bank's own GIN index dropped inside a transaction rolled back: the
                    # same searches on the shared index only, question by question.
                    tx = conn.transaction()
                    await tx.start()
                    try:
                        if shared:
                            await conn.execute(f"DROP INDEX {gin}")
                        for name, result in (
                            await _keyword_searches(conn, bank, size, text, cap, deep)
                        ).items():
                            suffix = " (shared GIN)" if shared else ""
                            if name == "arm":  # its top 50 (proven) and its ranks to `deep`
                                for k in (50, deep):
                                    ov = _overlap(result[0][:k], exact[text][k])
                                    runs.setdefault(f"arm {deep}, top 50 proven @{k}{suffix}", []).append(
                                        (ov, *result[1:])
                                    )
                                continue
                            k = deep if name == f"maxscore@{deep}" else 50
                            ov = _overlap(result[0], ref if name == "rarest" else exact[text][k])
                            runs.setdefault(name + suffix, []).append((ov, *result[1:]))
                    finally:
                        await tx.rollback()
            out[cap] = {}
            for name, rs in runs.items():
                worst = min(rs, key=lambda r: r[0])
                times = [r[1] for r in rs]
                slowest = max(rs, key=lambda r: r[1])
                out[cap][name] = {
                    "mean": float(np.mean([r[0] for r in rs])),
                    "min": worst[0],
                    "worst_query": worst[2],
                    "p50_ms": statistics.median(times),
                    "p95_ms": percentile(times, 95),
                    "max_ms": slowest[1],
                    "slowest_query": slowest[2],
                    "candidates_p50": statistics.median([r[3] for r in rs]),
                    "candidates_max": max(r[3] for r in rs),
                    "proven_share": float(np.mean([r[4] for r in rs])),
                }
    return out


async def _keyword_searches(
    conn: asyncpg.Connection, bank: str, size: int, text: str, cap: int, deep: int
) -> dict[str, tuple[list[Any], float, str, int, bool]]:
    """One question's keyword searches: ``(ids, ms, text, facts scored, proven)`` by search."""
    out: dict[str, tuple[list[Any], float, str, int, bool]] = {}
    started = time.perf_counter()
    plan = sql.keyword_plan(await query_lexemes(conn, bank, text), max_candidates=cap)
    rows = await sql.bounded_keyword_search(
        conn, bank, plan, limit=50, max_candidates=cap, filters=_ANY, bank_size=size
    )
    out["rarest"] = ([r["id"] for r in rows], (time.perf_counter() - started) * 1000, text, 0, plan.complete)
    for name, k, proven in (("maxscore", 50, 50), ("arm", deep, 50), (f"maxscore@{deep}", deep, deep)):
        started = time.perf_counter()
        terms, avg_length = await keyword_bound.term_stats(conn, bank, text, sql.KeywordPrior())
        assert avg_length is not None
        found = await keyword_bound.bounded_search(
            conn,
            bank,
            terms,
            avg_length,
            bank_size=size,
            limit=k,
            proven_top=proven,
            max_candidates=cap,
            filters=_ANY,
        )
        ms = (time.perf_counter() - started) * 1000
        out[name] = ([h.id for h in found.hits], ms, text, found.candidates, found.proven)
    return out


def turn_order(names: Sequence[str], question: int) -> list[str]:
    """The variants in the order the ``question``-th question runs them: rotated by one each
    question, so each runs first equally often."""
    shift = question % len(names) if names else 0
    return [*names[shift:], *names[:shift]]


async def _recalls(
    pool: asyncpg.Pool,
    variants: dict[str, tuple[Embedder, bool, str]],
    bank: str,
    questions: Sequence[str],
    now: datetime,
) -> dict[str, dict[str, Any]]:
    """Each question recalled once per variant (embedding runtime, arms started early or not, preset),
    the variants alternated question by question so that the machine's load swings hit them alike,
    and each variant first in turn (`turn_order`): the one after reads the pages the first just
    read, so a fixed order would hand every cold read to the first."""
    latencies: dict[str, list[float]] = {r: [] for r in variants}
    stages: dict[str, dict[str, list[float]]] = {r: {} for r in variants}
    slow: dict[str, list[dict[str, Any]]] = {r: [] for r in variants}
    for i, q in enumerate(questions):
        for name in turn_order(list(variants), i):
            embedder, early, preset = variants[name]
            req = RecallRequest(query=q, trace=True, query_timestamp=now, preset=preset)
            started = time.perf_counter()
            response = await run_recall(
                pool, embedder, None, bank, req, max_consistency_wait_s=0, early_arms=early
            )
            elapsed = (time.perf_counter() - started) * 1000
            if i < 3:  # warm-up: caches, first plans
                continue
            latencies[name].append(elapsed)
            trace = response.trace or {}
            for stage, ms in trace.get("timings_ms", {}).items():
                stages[name].setdefault(stage, []).append(ms)
            for arm, detail in trace.get("arms", {}).items():
                stages[name].setdefault(f"arm:{arm}", []).append(detail["elapsed_ms"])
            slow[name].append(
                {"ms": elapsed, "query": q, "stages": trace.get("timings_ms", {})}
                | {f"arm:{a}": d["elapsed_ms"] for a, d in trace.get("arms", {}).items()}
                | {f"note:{a}": d.get("note") for a, d in trace.get("arms", {}).items() if d.get("note")}
            )
    return {
        name: {
            "p50_ms": percentile(latencies[name], 50),
            "p95_ms": percentile(latencies[name], 95),
            "n": len(latencies[name]),
            "stage_medians_ms": {k: statistics.median(v) for k, v in stages[name].items()},
            "slowest": sorted(slow[name], key=lambda r: -r["ms"])[:5],
        }
        for name in variants
    }


async def _sizes(pool: asyncpg.Pool) -> dict[str, Any]:
    row = await pool.fetchrow(
        """
        SELECT (SELECT count(*) FROM memory_units) AS facts, (SELECT count(*) FROM memory_links) AS links,
               (SELECT count(*) FROM unit_entities) AS unit_entities,
               (SELECT count(DISTINCT bank_id) FROM memory_units) AS banks,
               pg_relation_size('memory_units') + coalesce(pg_relation_size(
                   (SELECT reltoastrelid FROM pg_class WHERE relname = 'memory_units')), 0) AS units_heap,
               pg_indexes_size('memory_units') AS units_indexes,
               pg_relation_size('memory_links') AS links_heap, pg_indexes_size('memory_links') AS links_indexes,
               pg_total_relation_size('unit_entities') + pg_total_relation_size('entities') AS entities_total,
               pg_relation_size('memory_units_search_gin') AS gin,
               (SELECT coalesce(sum(pg_relation_size(index_name::regclass)), 0)::bigint FROM bank_vector_indexes) AS hnsw,
               (SELECT coalesce(sum(facts_at_build), 0)::bigint FROM bank_vector_indexes) AS hnsw_facts
        """
    )
    d = {k: int(v) for k, v in row.items()}
    d["bytes_per_fact_heap"] = d["units_heap"] / d["facts"]
    d["bytes_per_fact_indexes_without_hnsw"] = (d["units_indexes"] - d["hnsw"]) / d["facts"]
    d["bytes_per_link"] = (d["links_heap"] + d["links_indexes"]) / max(d["links"], 1)
    d["hnsw_bytes_per_fact"] = d["hnsw"] / max(d["hnsw_facts"], 1)
    d["hnsw_gb_per_million_facts"] = d["hnsw_bytes_per_fact"] * 1e6 / 1e9
    return d


async def _stats_timing(pool: asyncpg.Pool, bank: str) -> dict[str, float]:
    """`/stats`' link counts: the count(*) it ran before, and the counters now."""
    before, after = [], []
    for _ in range(5):
        started = time.perf_counter()
        await pool.fetch(
            "SELECT link_type, count(*) FROM memory_links WHERE bank_id = $1 GROUP BY link_type", bank
        )
        before.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        await bank_stats(pool, bank)
        after.append((time.perf_counter() - started) * 1000)
    return {"count_links_ms": statistics.median(before), "bank_stats_ms": statistics.median(after)}


def _questions(n: int, seed: int) -> list[str]:
    qs = [q.question for path in conversation_paths(None) for q in load_sample(path).questions]
    random.Random(seed).shuffle(qs)
    return qs[:n]


async def run(args: argparse.Namespace, data_dir: Path) -> dict[str, Any]:
    sources = load_sources()
    vectors = embed_sources(sources, args.cache)
    measured = [n for n in MEASURED if n <= args.total]
    plans = bank_plan(args.total, measured, args.min_banks, args.seed)
    built = data_dir / "built.json"
    postgres = EmbeddedPostgres(data_dir / "pg")
    dsn = postgres.start()
    try:
        await apply_migrations(dsn)
        if built.exists():  # --data-dir of an earlier run: measure the same table again
            build = json.loads(built.read_text())
            # statistics of older code
            for change in await maintain_once(dsn, args.index_min_facts, build_memory_mb=_build_memory_mb()):
                console.print(f"[dim]{change}[/dim]")
        else:
            build = await _build(dsn, args, plans, sources, vectors)
            built.write_text(json.dumps(build))
        pool = await create_pool(dsn, max_size=8)
        try:
            return await _measure(args, pool, vectors, measured, build)
        finally:
            await pool.close()
    finally:
        postgres.stop()


async def _build(
    dsn: str, args: argparse.Namespace, plans: Any, sources: Any, vectors: np.ndarray
) -> dict[str, float]:
    conn = await asyncpg.connect(dsn)
    from pgvector.asyncpg import register_vector

    await register_vector(conn)
    started = time.perf_counter()
    build = await load_banks(conn, plans, sources, vectors, seed=args.seed)
    await conn.execute("SET maintenance_work_mem = '512MB'")
    clock = time.perf_counter()
    changes = await maintain_once(dsn, args.index_min_facts, build_memory_mb=_build_memory_mb())
    build["maintenance_s"] = time.perf_counter() - clock
    build["total_s"] = time.perf_counter() - started
    await conn.close()
    for change in changes:
        console.print(f"[dim]{change}[/dim]")
    return build


def _build_memory_mb() -> int:
    """The service's build memory (TEMPR_INDEX_BUILD_MEMORY_MB), so the bench builds as it does."""
    return Settings().index_build_memory_mb


def _embedder(variant: str) -> Embedder:
    """torch, onnx, or onnx-int8 (questions embedded by the int8 graph, TEMPR_QUERY_EMBEDDING_PRECISION)."""
    runtime, _, precision = variant.partition("-")
    return get_embedder(PACKAGED_EMBEDDING_MODEL, runtime=runtime, query_precision=precision or "float32")


async def _measure(
    args: argparse.Namespace,
    pool: asyncpg.Pool,
    vectors: np.ndarray,
    measured: list[int],
    build: dict[str, float],
) -> dict[str, Any]:
    embedders = {r: _embedder(r) for r in args.runtimes}
    # As the API does once started: a full collection would otherwise walk the models' and the
    # build's objects inside some recall (0.4 s, counted in its "include" stage, in stop 26's first runs).
    freeze_start_up_heap()
    embedder = embedders[args.runtimes[-1]]
    variants = {
        "/".join(
            [r]
            + ([("early" if early else "late")] if len(args.early_arms) > 1 else [])
            + ([preset] if len(args.presets) > 1 else [])
        ): (embedders[r], early, preset)
        for r in args.runtimes
        for early in args.early_arms
        for preset in args.presets
    }
    main_variant = list(variants)[-1]
    questions = _questions(args.queries + 3, args.seed)
    rng = np.random.default_rng(args.seed)
    rows: dict[str, Any] = {}
    for size in (n for n in measured if not args.only or n in args.only):
        bank = f"scale-{size}"
        shape = await sql.bank_shape(pool, bank, min_share=0.25, min_mentions=3)
        qvec = embedder.encode(questions[: args.queries])
        picks = rng.integers(0, len(vectors), 10)
        noise = rng.normal(0, 0.0247, (10, vectors.shape[1])).astype(np.float32)
        fact_vecs = vectors[picks] + noise
        fact_vecs /= np.linalg.norm(fact_vecs, axis=1, keepdims=True)
        by_variant = await _recalls(pool, variants, bank, questions, args.now)
        result = dict(by_variant[main_variant]) | {"runtimes": by_variant}
        quality = await _quality(pool, bank, shape.indexed, qvec, fact_vecs)
        result["indexed"] = shape.indexed
        result["overlap"] = {
            k: {"mean": float(np.mean(v)), "min": float(np.min(v))} for k, v in quality.items()
        }
        if shape.keyword_stats:
            caps = await _keyword_overlap(
                pool, bank, shape.size, questions[: args.queries], args.keyword_caps
            )
            result["keyword_overlap"] = caps[args.keyword_caps[0]]["maxscore"]
            result["keyword_caps"] = caps
        rows[bank] = result
        console.print(f"[dim]{bank}: p50 {result['p50_ms']:.1f} ms[/dim]")
    report = {
        "build": build,
        "sizes": await _sizes(pool),
        "stats": await _stats_timing(
            pool, "scale-100000" if 100_000 in measured else f"scale-{measured[-1]}"
        ),
        "rows": rows,
    }
    return report


def _print(report: dict[str, Any], args: argparse.Namespace) -> None:
    sizes = report["sizes"]
    stage_names = [
        "embed",
        "arm:semantic",
        "arm:keyword",
        "arm:temporal",
        "arms",
        "hydrate",
        "rerank",
        "boosts",
    ]
    rows = []
    for bank, r in report["rows"].items():
        med = r["stage_medians_ms"]
        ov = r["overlap"]
        kw = r.get("keyword_overlap")
        rows.append(
            [bank.removeprefix("scale-"), "hnsw" if r["indexed"] else "exact", r["p50_ms"], r["p95_ms"]]
            + [med.get(s, float("nan")) for s in stage_names]
            + [ov["semantic"]["mean"], ov["semantic"]["min"], ov["seeds"]["min"], ov["neighbours"]["min"]]
            + [kw["mean"] if kw else float("nan")]
        )
    print_table(
        f"Recall at scale: {sizes['facts']:,} facts, {sizes['links']:,} links, {sizes['banks']:,} banks "
        f"(in-process, median ms; 2 shared cores, noisy)",
        ["facts", "vector", "p50", "p95", *stage_names, "sem ov", "sem min", "seeds min", "nbr min", "kw ov"],
        rows,
        digits=1,
    )
    names = list(next(iter(report["rows"].values()))["runtimes"])
    if len(names) > 1:
        print_table(
            "Recall by variant (runtime / arms early or late / preset), alternated query by query (median ms)",
            ["facts", *(f"{r} {c}" for r in names for c in ("p50", "p95", "embed"))],
            [
                [bank.removeprefix("scale-")]
                + [
                    x
                    for rt in names
                    for x in (
                        r["runtimes"][rt]["p50_ms"],
                        r["runtimes"][rt]["p95_ms"],
                        r["runtimes"][rt]["stage_medians_ms"]["embed"],
                    )
                ]
                for bank, r in report["rows"].items()
            ],
            digits=1,
        )
    caps = [(bank, r["keyword_caps"]) for bank, r in report["rows"].items() if "keyword_caps" in r]
    if caps:
        print_table(
            "Bounded keyword arm by candidate cap and search: top-k overlap with scoring every match "
            "(rarest: stop 15's cut against query-time BM25), ms, facts scored, share proven",
            [
                "facts",
                "cap",
                "search",
                "ms p50",
                "ms p95",
                "ms max",
                "mean",
                "min",
                "scored p50",
                "max",
                "proven",
            ],
            [
                [bank.removeprefix("scale-"), cap, name]
                + [
                    c[k]
                    for k in ("p50_ms", "p95_ms", "max_ms", "mean", "min", "candidates_p50", "candidates_max")
                ]
                + [c["proven_share"]]
                for bank, by_cap in caps
                for cap, by_name in by_cap.items()
                for name, c in by_name.items()
            ],
            digits=2,
        )
    b = report["build"]
    st = report["stats"]
    print_table(
        "Build and storage",
        ["what", "value"],
        [
            ["build total s", b["total_s"]],
            ["  COPY s", b["copy_s"]],
            ["  secondary indexes s", b["secondary_indexes_s"]],
            ["  maintenance (HNSW + lexemes) s", b["maintenance_s"]],
            ["fact heap+toast bytes/fact", sizes["bytes_per_fact_heap"]],
            ["fact indexes (no HNSW) bytes/fact", sizes["bytes_per_fact_indexes_without_hnsw"]],
            ["link bytes/link (heap+indexes)", sizes["bytes_per_link"]],
            ["HNSW bytes/indexed fact", sizes["hnsw_bytes_per_fact"]],
            ["/stats links: count(*) ms", st["count_links_ms"]],
            ["/stats now (counters) ms", st["bank_stats_ms"]],
        ],
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--total", type=int, default=1_000_000, help="facts in the table")
    parser.add_argument("--min-banks", type=int, default=1000, help="banks in the table, at least")
    parser.add_argument("--queries", type=int, default=40, help="LoCoMo questions per bank size")
    parser.add_argument("--index-min-facts", type=int, default=10_000, help="per-bank HNSW from this size")
    parser.add_argument("--seed", type=int, default=16)
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "tempr-bench")
    parser.add_argument("--json", type=Path, default=None, help="write the results here")
    parser.add_argument("--keep", action="store_true", help="keep the database directory")
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help="build here and keep it; if it holds an earlier build (same flags), measure that one",
    )
    parser.add_argument(
        "--runtimes",
        default="onnx,onnx-int8",
        help="embedding runtimes to alternate (the last is the main table's): torch, onnx, "
        "onnx-int8 (questions embedded in int8, the service's default)",
    )
    parser.add_argument(
        "--early-arms",
        default="on",
        help="on, off or off,on: start the keyword arm during the embedding (on) or after it (off), alternated",
    )
    parser.add_argument(
        "--presets",
        default="default",
        help="recall presets to alternate, e.g. unproven-keyword-cut,default (the last is the main table's)",
    )
    parser.add_argument(
        "--only", default="", help="measure only these bank sizes (comma-separated; the build is the same)"
    )
    parser.add_argument(
        "--keyword-caps",
        default="4000",
        help="candidate caps to measure the bounded keyword arm at (the first is the main table's)",
    )
    args = parser.parse_args(argv)
    args.runtimes = args.runtimes.split(",")
    args.early_arms = [x == "on" for x in args.early_arms.split(",")]
    args.presets = args.presets.split(",")
    args.keyword_caps = [int(x) for x in args.keyword_caps.split(",")]
    args.only = [int(x) for x in args.only.split(",") if x]
    args.now = datetime(2024, 1, 1, tzinfo=UTC)
    data_dir = args.data_dir or Path(tempfile.mkdtemp(prefix="tempr-scale-"))
    data_dir.mkdir(parents=True, exist_ok=True)
    args.keep = args.keep or args.data_dir is not None
    try:
        report = asyncio.run(run(args, data_dir))
    finally:
        if not args.keep:
            shutil.rmtree(data_dir, ignore_errors=True)
    report["meta"] = {
        "total": args.total,
        "min_banks": args.min_banks,
        "queries": args.queries,
        "index_min_facts": args.index_min_facts,
        "seed": args.seed,
        "runtimes": args.runtimes,
        "early_arms": args.early_arms,
        "presets": args.presets,
        "keyword_caps": args.keyword_caps,
    }
    _print(report, args)
    write_json(args.json, report)


if __name__ == "__main__":
    main()
