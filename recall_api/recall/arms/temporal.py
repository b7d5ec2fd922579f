"""The temporal arm: facts inside the time window the question names, spread over it."""

from __future__ import annotations

import asyncpg

from tempr.recall_api.recall.arms.base import ArmContext, ArmHit, ArmResult, recall_arm
from tempr.store import recall as sql

__all__ = ["temporal_arm"]


@recall_arm("temporal")
async def temporal_arm(pool: asyncpg.Pool, ctx: ArmContext) -> ArmResult:
    if ctx.window is None:
        return ArmResult("temporal", [], note="no time expression")
    async with pool.acquire() as conn:
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
