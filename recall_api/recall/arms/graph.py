"""The graph arm behind one small interface: spreading activation (``bfs``) or meta-path
forward push (``mpfp``), chosen per request, else by the bank's config, else by the preset."""

from __future__ import annotations

from typing import Protocol

import asyncpg

from tempr.recall_api.recall.arms.base import ArmContext, ArmHit, ArmResult, recall_arm
from tempr.recall_api.recall.config import GRAPH_RETRIEVERS, GraphRetrieverName, RecallConfig
from tempr.recall_api.recall.graph_mpfp import MpfpRetriever
from tempr.store import recall as sql

__all__ = [
    "RETRIEVERS",
    "BfsRetriever",
    "GraphRetriever",
    "graph_arm",
    "graph_choice",
    "with_graph_choice",
]


class GraphRetriever(Protocol):
    name: str

    async def retrieve(self, pool: asyncpg.Pool, ctx: ArmContext) -> ArmResult: ...


class BfsRetriever:
    """Spreading activation one hop out of the query's nearest facts (its own seeds, in SQL)."""

    name = "bfs"

    async def retrieve(self, pool: asyncpg.Pool, ctx: ArmContext) -> ArmResult:
        assert ctx.embedding is not None
        cfg = ctx.cfg
        async with pool.acquire() as conn:
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
        return ArmResult("graph", hits, note=f"bfs: seeds={rows[0]['seeds']}" if rows else "bfs: no seeds")


RETRIEVERS: dict[str, GraphRetriever] = {"bfs": BfsRetriever(), "mpfp": MpfpRetriever()}


@recall_arm("graph")
async def graph_arm(pool: asyncpg.Pool, ctx: ArmContext) -> ArmResult:
    """The graph arm by the configured retriever; mpfp starts from the other arms' hits."""
    return await RETRIEVERS[ctx.cfg.graph_retriever].retrieve(pool, ctx)


def graph_choice(requested: GraphRetrieverName | None, stored: str | None) -> GraphRetrieverName | None:
    """The graph retriever the request names, else the one the bank's config names, if any."""
    if requested is not None:
        return requested
    return stored if stored in GRAPH_RETRIEVERS else None  # type: ignore[return-value]


def with_graph_choice(cfg: RecallConfig, choice: GraphRetrieverName | None, preset: str) -> RecallConfig:
    """A choice of retriever picks the one the graph arm runs, and in the default preset (which
    leaves the arm out) switches the arm on; a preset that names its arms keeps them."""
    if choice is None:
        return cfg
    return cfg.model_copy(update={"graph_retriever": choice, "graph": cfg.graph or preset == "default"})
