"""Prometheus exposition of the API's metrics."""

from __future__ import annotations

import contextlib

from fastapi import APIRouter, Request
from fastapi.responses import Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from tempr.recall_api.deps import PoolDep
from tempr.store import banks, dead_letters, messages

__all__ = ["router"]

router = APIRouter(tags=["health"])


@router.get(
    "/metrics",
    response_class=Response,
    responses={200: {"content": {CONTENT_TYPE_LATEST: {}}, "description": "Prometheus text format."}},
    summary="Prometheus metrics: requests and latency by route, pending messages, dead letters, banks",
)
async def metrics(request: Request, pool: PoolDep) -> Response:
    api_metrics = request.app.state.metrics
    api_metrics.pending_messages.set(await messages.pending_count(pool))
    api_metrics.dead_letters.set(await dead_letters.count_pending(pool))
    api_metrics.banks.set(await banks.count_banks(pool))
    reader = request.app.state.group_lag
    if reader is not None:
        with contextlib.suppress(Exception):  # unknown this time: the gauge keeps its last value
            for topic, lag in (await reader.read()).items():
                api_metrics.group_lag.labels(topic=topic).set(lag)
    return Response(generate_latest(api_metrics.registry), media_type=CONTENT_TYPE_LATEST)
