"""Recall orchestration: arms in parallel → RRF → prefilter → rerank → boosts → packing.

I/O lives here and in ``arms``/``store.recall``; the arithmetic is in the pure modules
(``fusion``, ``scoring``, ``packing``), which this file only sequences and traces.
"""

from __future__ import annotations

import asyncio
import time
from contextlib import AbstractAsyncContextManager, nullcontext
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

import asyncpg
import numpy as np

from tempr.errors import InvalidRequest
from tempr.inference.embeddings import Embedder
from tempr.inference.rerank import Reranker
from tempr.recall_api.recall import fusion, scoring
from tempr.recall_api.recall.arms import ArmContext, ArmResult, OtherArms, enabled_specs, run_arm
from tempr.recall_api.recall.arms.graph import graph_choice, with_graph_choice
from tempr.recall_api.recall.asked_when import with_recency_for
from tempr.recall_api.recall.config import PRESETS, RecallConfig, budget_to_limit, get_preset
from tempr.recall_api.recall.consistency import wait_for_consistency
from tempr.recall_api.recall.diversity import demote_covered, mmr_order, quotes
from tempr.recall_api.recall.packing import pack_by_tokens, split_sentences
from tempr.recall_api.recall.passages import passage_relevance_of
from tempr.recall_api.recall.query_vector import blend, strip_names, worth_embedding
from tempr.recall_api.recall.rerank import format_candidate, rerank_scores
from tempr.recall_api.recall.results import attach_includes, build_result, build_trace
from tempr.recall_api.recall.subject import asked_about, relative_of
from tempr.recall_api.recall.temporal import (
    EventAnchor,
    QueryWindow,
    anchored_window,
    event_anchor,
    query_window,
)
from tempr.schemas.recall import RecallBudget, RecallRequest, RecallResponse, TimeWindow
from tempr.store import recall as sql

__all__ = ["Scored", "resolve_preset", "run_recall"]


def resolve_preset(name: str) -> RecallConfig:
    try:
        return get_preset(name)
    except KeyError:
        raise InvalidRequest(f"unknown preset {name!r}; valid presets: {sorted(PRESETS)}") from None


async def _anchored(
    pool: asyncpg.Pool,
    shape: sql.BankShape,
    bank_id: str,
    anchor: EventAnchor,
    vector: Any,
    now: datetime,
    cfg: RecallConfig,
) -> QueryWindow | None:
    async with pool.acquire() as conn:
        row = await sql.event_date(
            conn,
            bank_id,
            vector,
            min_similarity=cfg.event_anchor_min_similarity,
            exact=not shape.indexed,
        )
    if row is None:
        return None
    return anchored_window(anchor, row["happened"], now, before_days=cfg.event_before_days)


class Scored:
    """A fused candidate with its stored row and scores at each stage."""

    __slots__ = ("arm_factor", "cand", "final", "proof", "recency", "rerank", "row", "temporal")

    def __init__(self, cand: fusion.Candidate, row: asyncpg.Record) -> None:
        self.cand, self.row = cand, row
        self.rerank = self.recency = self.temporal = self.proof = self.final = 0.0
        self.arm_factor = 1.0

    @property
    def when(self) -> datetime | None:
        when: datetime | None = self.row["occurred_start"] or self.row["mentioned_at"]
        return when


def _filters(req: RecallRequest) -> sql.RecallFilters:
    win = req.time_window
    return sql.RecallFilters(
        types=req.types,
        tags=req.tags,
        tags_match=req.tags_match,
        window_start=win.start if win else None,
        window_end=win.end if win else None,
    )


def _span_middle(row: asyncpg.Record) -> datetime | None:
    start: datetime | None = row["occurred_start"] or row["mentioned_at"]
    end = row["occurred_end"]
    return start + (end - start) / 2 if start and end and end > start else start


def _apply_boosts(items: list[Scored], cfg: RecallConfig, now: datetime, ctx: ArmContext) -> None:
    win = ctx.window
    for s in items:
        when = (
            scoring.last_known(s.row["occurred_start"], s.row["occurred_end"], s.row["mentioned_at"])
            if cfg.recency_from == "known"
            else s.when
        )
        s.recency = scoring.recency_signal(
            when, now, horizon_days=cfg.recency_horizon_days, floor=cfg.recency_floor
        )
        s.temporal = (
            scoring.temporal_proximity_signal(_span_middle(s.row), win.start, win.end)
            if win
            else scoring.NEUTRAL_SIGNAL
        )
        is_observation = s.row["fact_type"] == "observation"
        s.proof = scoring.proof_signal(s.row["proof_count"]) if is_observation else scoring.NEUTRAL_SIGNAL
        # Arm boosts act again after reranking, as a plain multiplier (see fusion for before).
        if cfg.arm_boosts:
            s.arm_factor = max(cfg.arm_boost(a) for a in s.cand.arm_ranks)
        s.final = scoring.final_score(s.rerank, s.recency, s.temporal, s.proof, cfg) * s.arm_factor


def _uses_mmr(cfg: RecallConfig) -> bool:
    return cfg.mmr_weight < 1.0


def _diversify(ranked: list[Scored], cfg: RecallConfig) -> list[Scored]:
    """MMR over the head (near-identical facts stop crowding it), then facts that only repeat
    sources (and, with demote_covered "repeats", sentences) already shown move behind the rest."""
    if _uses_mmr(cfg) and len(ranked) > 2:
        head = ranked[: cfg.mmr_top]
        if all(s.row["embedding"] is not None for s in head):  # they all should have one
            stacked = np.stack([sql.vector_of(s.row["embedding"]) for s in head])
            ranked = [head[i] for i in mmr_order([s.final for s in head], stacked, cfg.mmr_weight)] + ranked[
                cfg.mmr_top :
            ]
    if cfg.diversify_sources:
        says = (lambda s: split_sentences(s.row["text"])) if cfg.demote_covered == "repeats" else None
        ranked, _ = demote_covered(ranked, lambda s: s.row["source_message_ids"], says)
    return ranked


class _Laps:
    """Milliseconds per stage, for the trace."""

    def __init__(self) -> None:
        self.timings: dict[str, float] = {}
        self._clock = time.perf_counter()

    def __call__(self, stage: str) -> None:
        now = time.perf_counter()
        self.timings[stage] = round((now - self._clock) * 1000, 2)
        self._clock = now


@dataclass(slots=True)
class _Query:
    """What the arms need from the question: its vector, keyword text and time window."""

    shape: sql.BankShape
    window: QueryWindow | None
    keyword_text: str
    without: str | None  # the question without ubiquitous names, when blended in
    vector: np.ndarray | None


@dataclass(frozen=True, slots=True)
class _Question:
    """What the question says before any embedding: enough to start the arms that need no vector."""

    window: QueryWindow | None
    anchor: EventAnchor | None
    keyword_text: str
    without: str | None  # the question without ubiquitous names, when blended in
    needs_vector: bool


def _read_question(req: RecallRequest, shape: sql.BankShape, cfg: RecallConfig, now: datetime) -> _Question:
    window = query_window(req.query, now)
    anchor = event_anchor(req.query) if window is None else None
    needs_vector = anchor is not None or any(spec.needs_vector for spec in enabled_specs(cfg))
    stripped = strip_names(req.query, shape.names) if shape.names else req.query  # once, for both uses
    blending = needs_vector and cfg.query_as_asked_weight < 1.0
    without = worth_embedding(req.query, stripped) if blending and shape.names else None
    keyword_text = stripped if cfg.keyword_without_names else req.query
    return _Question(window, anchor, keyword_text, without, needs_vector)


async def _understand(
    pool: asyncpg.Pool,
    embedder: Embedder,
    shape: sql.BankShape,
    bank_id: str,
    req: RecallRequest,
    cfg: RecallConfig,
    now: datetime,
    question: _Question,
) -> _Query:
    """The query vector (blended when names were taken out) and an event's time window."""
    window, anchor, without = question.window, question.anchor, question.without
    if not question.needs_vector:
        return _Query(shape, window, question.keyword_text, without, None)
    texts = [req.query] if anchor is None else [req.query, anchor.event]
    vectors = await embedder.aencode_queries([*texts, without] if without else texts)
    vector = blend(vectors[0], vectors[-1], cfg.query_as_asked_weight) if without else vectors[0]
    if anchor is not None:
        window = await _anchored(pool, shape, bank_id, anchor, vectors[1], now, cfg)
    return _Query(shape, window, question.keyword_text, without, vector)


def _arm_context(
    bank_id: str,
    req: RecallRequest,
    cfg: RecallConfig,
    shape: sql.BankShape,
    keyword_text: str,
    tasks: dict[str, asyncio.Future[ArmResult]],
) -> ArmContext:
    """The arms' context before the query vector and the time window are known."""
    return ArmContext(
        bank_id=bank_id,
        keyword_text=keyword_text,
        embedding=None,
        filters=_filters(req),
        limit=budget_to_limit(req.budget),
        cfg=cfg,
        bank_size=shape.size,
        ubiquitous_entities=shape.entity_ids,
        indexed=shape.indexed,
        keyword_stats=shape.keyword_stats,
        others=OtherArms(tasks),
    )


def _start_arms(
    pool: asyncpg.Pool, ctx: ArmContext, tasks: dict[str, asyncio.Future[ArmResult]], *, vector_free: bool
) -> None:
    """Start the enabled arms not started yet (only those that need no vector if ``vector_free``);
    one that builds on others' hits (graph) awaits them in ctx.others."""
    for spec in enabled_specs(ctx.cfg):
        if spec.name not in tasks and not (vector_free and spec.needs_vector):
            tasks[spec.name] = asyncio.ensure_future(run_arm(pool, spec.name, ctx))


async def _cancel(tasks: dict[str, asyncio.Future[ArmResult]]) -> None:
    for task in tasks.values():
        task.cancel()
    await asyncio.gather(*tasks.values(), return_exceptions=True)


async def _hydrate(
    pool: asyncpg.Pool,
    shape: sql.BankShape,
    bank_id: str,
    survivors: list[fusion.Candidate],
    vector: np.ndarray | None,
    cfg: RecallConfig,
) -> list[Scored]:
    """The survivors' rows, each with the turns around its own for passage context (``nearby``):
    read in one statement, and not at all in a bank that journaled no conversation."""
    ids = [c.unit_id for c in survivors]
    passages = cfg.passage_weight > 0.0 and len(survivors) >= 2 and shape.conversations
    width = cfg.passage_turns if passages else 0
    async with pool.acquire() as conn:
        fetched = await sql.fetch_units(
            conn, bank_id, ids, vector, with_embeddings=_uses_mmr(cfg), passage_turns=width
        )
    rows = {r["id"]: r for r in fetched}
    return [Scored(c, rows[c.unit_id]) for c in survivors if c.unit_id in rows]


async def _rerank(
    reranker: Reranker | None, query: str, items: list[Scored], cfg: RecallConfig, arms: list[ArmResult]
) -> str:
    """Relevance of each candidate: the cross-encoder's when there is one, else the
    query-fact cosine with the keyword evidence added (`relevance="cosine"`), else the fused
    scores spread out."""
    cross_encoder = reranker if cfg.rerank else None
    if (
        cross_encoder is None
        and cfg.relevance == "cosine"
        and all(s.row["cosine"] is not None for s in items)
    ):
        lexical = {h.unit_id: h.detail["coverage"] for r in arms if r.arm == "keyword" for h in r.hits}
        asked = asked_about(query) if cfg.other_subject_factor < 1.0 else frozenset()
        for s in items:
            cosine = max(float(s.row["cosine"]), 0.0)
            keyword = cfg.keyword_weight * lexical.get(s.cand.unit_id, 0.0)
            if asked and relative_of(s.row["text"]) in asked:
                # The words such a fact shares with the question are its relative's clause
                # ("Tomasz's brother Piotr ... works in a bank"), not evidence about the person.
                s.rerank = cfg.other_subject_factor * (
                    cosine + (keyword if cfg.other_subject_keyword else 0.0)
                )
            else:
                s.rerank = cosine + keyword
        return "cosine+keyword" if lexical and cfg.keyword_weight else "cosine"
    docs = [format_candidate(s.row["text"], s.when) for s in items]
    scores, method = await rerank_scores(cross_encoder, query, docs, [s.cand.fused_score for s in items])
    for s, score in zip(items, scores, strict=True):
        s.rerank = score
    return method


def _in_passages(items: list[Scored], cfg: RecallConfig) -> None:
    """Blend each candidate's relevance with its passage's (recall/passages.py)."""
    if cfg.passage_weight <= 0.0 or len(items) < 2:
        return
    blended = passage_relevance_of(
        items,
        [s.rerank for s in items],
        lambda s: s.row["source_message_ids"],
        [s.row.get("nearby") for s in items],
        cfg.passage_weight,
    )
    for s, score in zip(items, blended, strict=True):
        s.rerank = score


def _order(items: list[Scored], cfg: RecallConfig, now: datetime, ctx: ArmContext) -> list[Scored]:
    """Boosts, then diversity: the final ranking."""
    _apply_boosts(items, cfg, now, ctx)
    ranked = sorted(items, key=lambda s: -s.final)  # stable: ties keep RRF order
    return _diversify(ranked, cfg)


def _pack(
    considered: list[Scored], max_tokens: int, cfg: RecallConfig
) -> tuple[list[tuple[Scored, str]], int]:
    """The packed results, each with the text it is shown with."""
    return pack_by_tokens(
        considered,
        lambda s: s.row["text"],
        max_tokens,
        sources_of=lambda s: s.row["source_message_ids"],
        quotes=(lambda big, small: quotes(big.row["text"], small.row["text"]))
        if cfg.diversify_sources and cfg.pack_absorbs_quotes
        else None,
        sentences_once=cfg.pack_sentences_once,
    )


async def run_recall(
    pool: asyncpg.Pool,
    embedder: Embedder,
    reranker: Reranker | None,
    bank_id: str,
    req: RecallRequest,
    *,
    max_consistency_wait_s: float,
    early_arms: bool = True,
    admission: AbstractAsyncContextManager[Any] | None = None,
) -> RecallResponse:
    """One recall. ``early_arms=False`` starts every arm after the embedding, also in a bank with
    keyword statistics, for side-by-side benchmarks only: the results are the same.

    ``admission`` (the API's `Admission`) is entered after the wait for ``after``: a recall
    waiting on its write holds no slot."""
    cfg = resolve_preset(req.preset)
    lap = _Laps()
    if req.after is not None:
        await wait_for_consistency(pool, bank_id, req.after, timeout_s=max_consistency_wait_s)
        lap("consistency_wait")

    async with admission or nullcontext():
        if admission is not None:
            lap("admission")  # the wait for a slot, in the trace's timings
        return await _search(pool, embedder, reranker, bank_id, req, cfg, lap, early_arms=early_arms)


async def _search(
    pool: asyncpg.Pool,
    embedder: Embedder,
    reranker: Reranker | None,
    bank_id: str,
    req: RecallRequest,
    cfg: RecallConfig,
    lap: _Laps,
    *,
    early_arms: bool,
) -> RecallResponse:
    now = req.query_timestamp or datetime.now(UTC)
    # The ubiquity thresholds are the preset's: a graph retriever choice does not move them.
    shape = await sql.bank_shape(
        pool, bank_id, min_share=cfg.ubiquitous_share, min_mentions=cfg.ubiquitous_min_mentions
    )
    cfg = with_graph_choice(cfg, graph_choice(req.graph_retriever, shape.graph_retriever), req.preset)
    cfg = with_recency_for(cfg, req.query)
    question = _read_question(req, shape, cfg, now)
    tasks: dict[str, asyncio.Future[ArmResult]] = {}
    ctx = _arm_context(bank_id, req, cfg, shape, question.keyword_text, tasks)
    # A big bank's keyword arm (tens of ms) runs while the question is embedded. A small bank's
    # takes a few ms: started early it only holds a pooled connection that recalls already past
    # their embedding wait for (16 clients on a 1k bank: -14 % req/s, docs/benchmarks.md).
    if early_arms and shape.keyword_stats:
        _start_arms(pool, ctx, tasks, vector_free=True)
    try:
        query = await _understand(pool, embedder, shape, bank_id, req, cfg, now, question)
    except BaseException:
        await _cancel(tasks)
        raise
    lap("embed")
    ctx = replace(ctx, embedding=query.vector, window=query.window)
    _start_arms(pool, ctx, tasks, vector_free=False)
    # In the arms' configured order, whatever order they started in: fusion's ties follow it.
    results = list(await asyncio.gather(*(tasks[spec.name] for spec in enabled_specs(cfg))))
    lap("arms")
    boosts = dict(cfg.arm_boosts)
    fused = fusion.fuse_candidates({r.arm: r.ids for r in results}, cfg.rrf_k, boosts)
    survivors = fusion.prefilter(fused, cfg.rerank_max_candidates)
    lap("fusion")
    items = await _hydrate(pool, shape, bank_id, survivors, query.vector, cfg)
    lap("hydrate")
    rerank_method = await _rerank(reranker, req.query, items, cfg, results)
    _in_passages(items, cfg)
    lap("rerank")
    ranked = _order(items, cfg, now, ctx)
    considered = ranked[: ctx.limit * cfg.packing_pool_factor]
    lap("boosts")
    shown, tokens = _pack(considered, req.max_tokens, cfg)
    packed = [s for s, _ in shown]
    lap("packing")
    out = [build_result(s, req.include, text=text) for s, text in shown]
    if req.include.entities or req.include.chunks:
        async with pool.acquire() as conn:
            await attach_includes(conn, bank_id, out, req.include)
    lap("include")
    timings = lap.timings
    timings["total"] = round(sum(timings.values()), 2)

    trace: dict[str, Any] | None = None
    if req.trace:
        trace = build_trace(
            preset=req.preset,
            query_timestamp=now,
            window=query.window,
            query_without_names=query.without,
            results=results,
            fused=fused,
            survivors=survivors,
            cfg=cfg,
            rerank_method=rerank_method,
            items=ranked,
            considered=considered,
            packed=packed,
            tokens=tokens,
            max_tokens=req.max_tokens,
            timings=timings,
        )
    window = query.window
    return RecallResponse(
        bank_id=bank_id,
        query=req.query,
        results=out,
        tokens_used=tokens,
        budget=RecallBudget(name=req.budget, limit=ctx.limit),
        temporal_window=TimeWindow(start=window.start, end=window.end) if window else None,
        trace=trace,
    )
