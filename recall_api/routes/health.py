"""Liveness of the database and the broker, and how much is still in flight."""

from __future__ import annotations

import asyncio

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from tempr.recall_api.deps import PoolDep
from tempr.schemas.api import Health
from tempr.store import messages

__all__ = ["router"]

router = APIRouter(tags=["health"])


@router.get("/health", response_model=Health, responses={503: {"model": Health}})
async def health(request: Request, pool: PoolDep) -> JSONResponse:
    database, pending = "ok", None
    try:
        pending = await asyncio.wait_for(messages.pending_count(pool), timeout=5)
    except Exception as exc:
        database = f"error: {exc!r}"
    broker = "ok"
    try:
        producer = request.app.state.publisher.producer
        await asyncio.wait_for(producer.client.fetch_all_metadata(), timeout=5)
    except Exception as exc:
        broker = f"error: {exc!r}"
    group_lag = await _group_lag(request)
    ok = database == "ok" and broker == "ok"
    body = Health(
        status="ok" if ok else "degraded",
        database=database,
        broker=broker,
        pending_events=pending,
        details={
            "consumer_lag": pending,
            "lag_unit": "accepted messages not yet materialized",
            # Records in each topic the workers' group has not committed yet; null where the
            # broker's end offsets cannot be trusted (Tansu).
            "group_lag": group_lag,
            "group_lag_total": None if group_lag is None else sum(group_lag.values()),
        },
    )
    return JSONResponse(status_code=200 if ok else 503, content=body.model_dump(mode="json"))


async def _group_lag(request: Request) -> dict[str, int] | None:
    reader = request.app.state.group_lag
    if reader is None:
        return None
    try:
        return await asyncio.wait_for(reader.read(), timeout=5)
    except Exception:  # reported as unknown; the broker's own check says why
        return None
