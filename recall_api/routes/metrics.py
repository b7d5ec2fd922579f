"""Prometheus exposition of the API's metrics."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from tempr.recall_api.deps import PoolDep, PublisherDep, SettingsDep
from tempr.recall_api.health_check import assess_health
from tempr.store import banks, dead_letters

__all__ = ["router"]

router = APIRouter(tags=["health"])


@router.get(
    "/metrics",
    response_class=Response,
    responses={200: {"content": {CONTENT_TYPE_LATEST: {}}, "description": "Prometheus text format."}},
    summary="Prometheus metrics: requests and latency by route, pipeline health, dead letters, banks",
)
async def metrics(
    request: Request, settings: SettingsDep, pool: PoolDep, publisher: PublisherDep
) -> Response:
    m = request.app.state.metrics
    health = await assess_health(
        settings, pool, publisher.producer, getattr(request.app.state, "group_lag", None)
    )
    m.healthy.set(1 if health.status == "ok" else 0)
    m.database_up.set(1 if health.database == "ok" else 0)
    m.broker_up.set(1 if health.broker == "ok" else 0)
    for name, stage in health.stages.items():
        m.stage_heartbeat_age.labels(name).set(stage.heartbeat_age_s)
        m.stage_busy.labels(name).set(stage.busy_s or 0)
        m.stage_failed.labels(name).set(stage.failed)
    for child, count in health.restarts.items():
        m.restarts.labels(child).set(count)
    # Unknown this time (or Tansu): the gauge keeps its last value.
    for topic, lag in (health.details.get("group_lag") or {}).items():
        m.group_lag.labels(topic=topic).set(lag)
    if health.database == "ok":
        m.pending_messages.set(health.pending_events or 0)
        m.oldest_pending.set(health.oldest_pending_age_s or 0)
        m.dead_letters.set(await dead_letters.count_pending(pool))
        m.banks.set(await banks.count_banks(pool))
    return Response(generate_latest(m.registry), media_type=CONTENT_TYPE_LATEST)
