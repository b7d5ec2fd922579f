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
from tempr.recall_api.recall.config import GraphRetrieverName
from tempr.recall_api.recall.graph_mpfp import MpfpRetriever
from tempr.store import graph as graph_sql

__all__ = ["RETRIEVERS", "BfsRetriever", "GraphRetriever", "GraphSeeds", "run_graph_arm"]


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


async def run_graph_arm(
    pool: asyncpg.Pool,
    ctx: ArmContext,
    pending: Mapping[str, asyncio.Future[ArmResult]],
    requested: GraphRetrieverName | None = None,
) -> ArmResult:
    """The graph arm, timed like the others (waiting for its seeds included: that is part of
    what the arm costs). A bank's stored choice applies when the request makes none."""
    started = time.perf_counter()
    if requested is None:
        async with pool.acquire() as conn:
            requested = await graph_sql.bank_graph_retriever(conn, ctx.bank_id)  # type: ignore[assignment]
    retriever = RETRIEVERS.get(requested or ctx.cfg.graph_retriever, RETRIEVERS[ctx.cfg.graph_retriever])
    result = await retriever.retrieve(pool, ctx, GraphSeeds(pending))
    result.note = f"{retriever.name}: {result.note}" if retriever.name == "bfs" else result.note
    result.elapsed_ms = round((time.perf_counter() - started) * 1000, 2)
    return result
