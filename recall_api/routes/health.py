"""Health: database, broker, stage heartbeats, backlog age and restarts (see health_check)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from tempr.recall_api.deps import PoolDep, PublisherDep, SettingsDep
from tempr.recall_api.health_check import assess_health
from tempr.schemas.api import Health

__all__ = ["router"]

router = APIRouter(tags=["health"])


@router.get("/health", response_model=Health, responses={503: {"model": Health}})
async def health(
    request: Request, settings: SettingsDep, pool: PoolDep, publisher: PublisherDep
) -> JSONResponse:
    body = await assess_health(
        settings, pool, publisher.producer, getattr(request.app.state, "group_lag", None)
    )
    return JSONResponse(status_code=200 if body.status == "ok" else 503, content=body.model_dump(mode="json"))
