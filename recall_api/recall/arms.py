"""The four retrieval arms. Each takes its own pool connection so they run concurrently."""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

import asyncpg
import numpy as np

from tempr.recall_api.recall.config import Arm, RecallConfig
from tempr.recall_api.recall.inflections import word_forms
from tempr.recall_api.recall.temporal import QueryWindow
from tempr.store import recall as sql
from tempr.store.keyword_stats import query_lexemes

__all__ = [
    "ArmContext",
    "ArmHit",
    "ArmResult",
    "graph_arm",
    "keyword_arm",
    "keyword_or_query",
    "run_arm",
    "semantic_arm",
    "temporal_arm",
]

_WORD = re.compile(r"\w+")


@dataclass(frozen=True, slots=True)
class ArmContext:
    bank_id: str
    keyword_text: str  # the question, less the bank's ubiquitous names (see query_vector)
    embedding: np.ndarray | None
    filters: sql.RecallFilters
    limit: int
    cfg: RecallConfig
    bank_size: int
    window: QueryWindow | None = None
    ubiquitous_entities: tuple[UUID, ...] = ()  # see RecallConfig.ubiquitous_min_mentions
    indexed: bool = False  # the bank has a vector index of its own (store/vector_indexes.py)
    keyword_stats: bool = False  # and keyword statistics (store/keyword_stats.py)

    @property
    def exact(self) -> bool:
        return not self.indexed

    @property
    def ef_search(self) -> int:
        return min(max(self.limit, self.cfg.ef_search_min), self.cfg.ef_search_max)


@dataclass(frozen=True, slots=True)
class ArmHit:
    unit_id: UUID
    score: float
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class ArmResult:
    arm: Arm
    hits: list[ArmHit]
    elapsed_ms: float = 0.0
    note: str | None = None

    @property
    def ids(self) -> list[UUID]:
        return [h.unit_id for h in self.hits]


def keyword_or_query(query: str, max_terms: int = 64) -> str:
    """The query's words, then their other inflections, OR-ed in websearch syntax:
    ``"melanie or bought or buy or buys or buying"``.

    Only word characters survive, so quotes, minus signs and operators in the user's text
    cannot change the query's meaning; stop words are dropped later by the parser.
    """
    words = [w for w in _WORD.findall(query.lower()) if w != "or"]
    terms = dict.fromkeys(words)
    for word in words:
        terms.update(dict.fromkeys(word_forms(word)))
    return " or ".join(list(terms)[:max_terms])


async def semantic_arm(conn: asyncpg.Connection, ctx: ArmContext) -> ArmResult:
    assert ctx.embedding is not None
    args: dict[str, Any] = {
        "limit": ctx.limit,
        "min_similarity": ctx.cfg.semantic_threshold,
        "min_results": ctx.cfg.semantic_min_results,
        "filters": ctx.filters,
        "ef_search": ctx.ef_search,
    }
    rows = await sql.semantic_search(conn, ctx.bank_id, ctx.embedding, exact=ctx.exact, **args)
    note = "exact" if ctx.exact else "hnsw"
    fetched = rows[0]["fetched"] if rows else 0
    if not ctx.exact and fetched < ctx.limit and ctx.bank_size <= ctx.cfg.exact_fallback_max_units:
        rows = await sql.semantic_search(conn, ctx.bank_id, ctx.embedding, exact=True, **args)
        note = "hnsw+exact-fallback"
    return ArmResult("semantic", [ArmHit(r["id"], float(r["score"])) for r in rows], note=note)


async def keyword_arm(conn: asyncpg.Connection, ctx: ArmContext) -> ArmResult:
    or_query = keyword_or_query(ctx.keyword_text, ctx.cfg.keyword_max_terms)
    if not or_query:
        return ArmResult("keyword", [], note="no terms")
    if not ctx.keyword_stats:
        rows = await sql.keyword_search(
            conn, ctx.bank_id, or_query, limit=ctx.limit, filters=ctx.filters, bank_size=ctx.bank_size
        )
        return ArmResult("keyword", _keyword_hits(rows), note=or_query)
    cap = ctx.cfg.keyword_max_candidates
    plan = sql.keyword_plan(await query_lexemes(conn, ctx.bank_id, or_query), max_candidates=cap)
    rows = await sql.bounded_keyword_search(
        conn,
        ctx.bank_id,
        plan,
        limit=ctx.limit,
        max_candidates=cap,
        filters=ctx.filters,
        bank_size=ctx.bank_size,
    )
    hits = _keyword_hits(rows)
    bound = "all terms" if plan.complete else f"rarest {len(plan.essential)}/{len(plan.frequencies)} terms"
    return ArmResult("keyword", hits, note=f"{or_query} ({bound})")


def _keyword_hits(rows: Sequence[asyncpg.Record]) -> list[ArmHit]:
    """Each match with its coverage: its BM25 over a full match's, in [0, 1]. One common word
    of a four-word question counts for little, however alone it is in matching (on a small
    bank, "days" in "sleeps most of the day" for "Where is Ingrid based these days?")."""
    return [
        ArmHit(
            r["id"],
            float(r["score"]),
            {"coverage": min(float(r["score"]) / float(r["full_match"]), 1.0) if r["full_match"] else 0.0},
        )
        for r in rows
    ]


async def graph_arm(conn: asyncpg.Connection, ctx: ArmContext) -> ArmResult:
    assert ctx.embedding is not None
    cfg = ctx.cfg
    rows = await sql.graph_expand(
        conn,
        ctx.bank_id,
        ctx.embedding,
        seed_count=cfg.graph_seed_count,
        seed_min_similarity=max(cfg.graph_seed_min_similarity, cfg.semantic_threshold),
        entity_weight=cfg.graph_entity_weight,
        semantic_link_min=cfg.graph_semantic_link_min,
        causal_boost=cfg.graph_causal_boost,
        hop_decay=cfg.graph_hop_decay,
        include_seeds=cfg.graph_include_seeds,
        limit=ctx.limit,
        filters=ctx.filters,
        exact=ctx.exact,
        ef_search=ctx.ef_search,
        ubiquitous_entities=ctx.ubiquitous_entities,
    )
    hits = [
        ArmHit(
            r["id"],
            float(r["score"]),
            {k: round(float(r[k]), 4) for k in ("entity", "semantic", "causal")},
        )
        for r in rows
    ]
    return ArmResult("graph", hits, note=f"seeds={rows[0]['seeds']}" if rows else None)


async def temporal_arm(conn: asyncpg.Connection, ctx: ArmContext) -> ArmResult:
    if ctx.window is None:
        return ArmResult("temporal", [], note="no time expression")
    rows = await sql.temporal_search(
        conn,
        ctx.bank_id,
        ctx.embedding,
        start=ctx.window.start,
        end=ctx.window.end,
        buckets=ctx.cfg.temporal_buckets,
        limit=ctx.limit,
        filters=ctx.filters,
    )
    hits = [ArmHit(r["id"], float(r["score"]), {"bucket": r["bucket"]}) for r in rows]
    return ArmResult("temporal", hits, note=ctx.window.expression)


_ARMS = {"semantic": semantic_arm, "keyword": keyword_arm, "graph": graph_arm, "temporal": temporal_arm}


async def run_arm(pool: asyncpg.Pool, arm: Arm, ctx: ArmContext) -> ArmResult:
    """Run one arm on a connection of its own and time it."""
    started = time.perf_counter()
    async with pool.acquire() as conn:
        result = await _ARMS[arm](conn, ctx)
    result.elapsed_ms = round((time.perf_counter() - started) * 1000, 2)
    return result
