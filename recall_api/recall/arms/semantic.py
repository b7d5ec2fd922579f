"""The semantic arm: the query vector's nearest facts in the bank."""

from __future__ import annotations

from typing import Any

import asyncpg

from tempr.recall_api.recall.arms.base import ArmContext, ArmHit, ArmResult, recall_arm
from tempr.store import recall as sql

__all__ = ["semantic_arm"]


@recall_arm("semantic")
async def semantic_arm(pool: asyncpg.Pool, ctx: ArmContext) -> ArmResult:
    async with pool.acquire() as conn:
        return await _nearest(conn, ctx)


async def _nearest(conn: asyncpg.Connection, ctx: ArmContext) -> ArmResult:
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
