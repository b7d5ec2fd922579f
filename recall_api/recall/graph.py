"""The graph arm behind one small interface: spreading activation (``bfs``) or meta-path
forward push (``mpfp``), chosen per request, else by the bank's config, else by the preset."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

import asyncpg

from tempr.recall_api.recall.arms import ArmContext, ArmHit, ArmResult, graph_arm
from tempr.recall_api.recall.config import GRAPH_RETRIEVERS, GraphRetrieverName, RecallConfig
from tempr.recall_api.recall.graph_mpfp import MpfpRetriever

__all__ = [
    "RETRIEVERS",
    "BfsRetriever",
    "GraphRetriever",
    "GraphSeeds",
    "graph_choice",
    "run_graph_arm",
    "with_graph_choice",
]


@dataclass(slots=True)
class GraphSeeds:
    """The other arms' results, as they finish: a retriever that starts from them awaits them."""

    pending: Mapping[str, Awaitable[ArmResult]] = field(default_factory=dict)

    def runs(self, arm: str) -> bool:
        return arm in self.pending

    async def hits(self, arm: str) -> list[ArmHit]:
        task = self.pending.get(arm)
        return [] if task is None else (await task).hits


class GraphRetriever(Protocol):
    name: str

    async def retrieve(self, pool: asyncpg.Pool, ctx: ArmContext, seeds: GraphSeeds) -> ArmResult: ...


class BfsRetriever:
    """Spreading activation one hop out of the query's nearest facts (its own seeds, in SQL)."""

    name = "bfs"

    async def retrieve(self, pool: asyncpg.Pool, ctx: ArmContext, seeds: GraphSeeds) -> ArmResult:
        async with pool.acquire() as conn:
            return await graph_arm(conn, ctx)


RETRIEVERS: dict[str, GraphRetriever] = {"bfs": BfsRetriever(), "mpfp": MpfpRetriever()}


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


async def run_graph_arm(
    pool: asyncpg.Pool, ctx: ArmContext, pending: Mapping[str, asyncio.Future[ArmResult]]
) -> ArmResult:
    """The graph arm by the configured retriever, timed like the others (waiting for its
    seeds included: that is part of what the arm costs)."""
    started = time.perf_counter()
    retriever = RETRIEVERS[ctx.cfg.graph_retriever]
    result = await retriever.retrieve(pool, ctx, GraphSeeds(pending))
    result.note = f"{retriever.name}: {result.note}" if retriever.name == "bfs" else result.note
    result.elapsed_ms = round((time.perf_counter() - started) * 1000, 2)
    return result
