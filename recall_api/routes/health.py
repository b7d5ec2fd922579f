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
    ok = database == "ok" and broker == "ok"
    body = Health(
        status="ok" if ok else "degraded",
        database=database,
        broker=broker,
        pending_events=pending,
        details={"consumer_lag": pending, "lag_unit": "accepted messages not yet materialized"},
    )
    return JSONResponse(status_code=200 if ok else 503, content=body.model_dump(mode="json"))
