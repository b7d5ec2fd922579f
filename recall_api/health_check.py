"""The pipeline's health, assessed once for /health and /metrics.

Not ok while Postgres or the broker is unreachable, while a stage has not beaten for
`TEMPR_HEALTH_STALE_AFTER_S` (its worker is dead or its loop frozen), while a stage is
busy on one batch past its time budget, while the oldest accepted message waits longer
than `TEMPR_HEALTH_MAX_BACKLOG_AGE_S`, or while `tempr up` restarts a child in a loop.

The workers' consumer-group lag (records not committed yet, by topic) is reported where the
broker's end offsets can be trusted (Apache Kafka), and never decides the status by itself.
"""

from __future__ import annotations

import asyncio
from typing import Any

import asyncpg

from tempr.schemas.api import Health, StageHealth
from tempr.settings import Settings
from tempr.store import heartbeats, messages
from tempr.streams.group_lag import GroupLag
from tempr.streams.runtime_state import RuntimeState

__all__ = ["assess_health"]

_TIMEOUT_S = 5.0


async def assess_health(
    settings: Settings, pool: asyncpg.Pool, producer: Any, group_lag: GroupLag | None = None
) -> Health:
    problems: list[str] = []
    database, pending, oldest = "ok", None, None
    stages: dict[str, StageHealth] = {}
    try:
        pending, oldest, states = await asyncio.wait_for(
            asyncio.gather(
                messages.pending_count(pool),
                messages.oldest_waiting_age_s(pool),
                heartbeats.stage_states(pool),
            ),
            timeout=_TIMEOUT_S,
        )
        stages = {
            s.stage: StageHealth(
                heartbeat_age_s=round(s.beat_age_s, 1),
                busy_s=None if s.busy_s is None else round(s.busy_s, 1),
                processed=s.processed,
                failed=s.failed,
            )
            for s in states
        }
    except Exception as exc:
        database = f"error: {exc!r}"
        problems.append("database unreachable")
    broker = "ok"
    try:
        await asyncio.wait_for(producer.client.fetch_all_metadata(), timeout=_TIMEOUT_S)
    except Exception as exc:
        broker = f"error: {exc!r}"
        problems.append("broker unreachable")
    if database == "ok":
        if not stages:
            problems.append("worker: no stage has reported a heartbeat yet")
        stuck_after = settings.stage_record_timeout_s + settings.health_stale_after_s
        for name, stage in sorted(stages.items()):
            if stage.heartbeat_age_s > settings.health_stale_after_s:
                problems.append(f"stage {name}: no heartbeat for {stage.heartbeat_age_s:.0f}s")
            elif stage.busy_s is not None and stage.busy_s > stuck_after:
                problems.append(f"stage {name}: stuck on one batch for {stage.busy_s:.0f}s")
        if oldest is not None and oldest > settings.health_max_backlog_age_s:
            problems.append(
                f"backlog: the oldest pending message has waited {oldest:.0f}s "
                f"(TEMPR_HEALTH_MAX_BACKLOG_AGE_S={settings.health_max_backlog_age_s:g})"
            )
    lag = await _group_lag(group_lag)
    runtime = RuntimeState.load(settings.data_dir)
    problems += [f"{child}: crash-looping (restarted again and again)" for child in runtime.crash_looping()]
    return Health(
        status="ok" if not problems else "degraded",
        database=database,
        broker=broker,
        pending_events=pending,
        oldest_pending_age_s=None if oldest is None else round(oldest, 1),
        stages=stages,
        restarts={name: c.restarts for name, c in runtime.children.items()},
        problems=problems,
        details={
            "consumer_lag": pending,
            "lag_unit": "accepted messages not yet materialized",
            # Records in each topic the workers' group has not committed yet; null where the
            # broker's end offsets cannot be trusted (Tansu) or could not be read this time.
            "group_lag": lag,
            "group_lag_total": None if lag is None else sum(lag.values()),
        },
    )


async def _group_lag(reader: GroupLag | None) -> dict[str, int] | None:
    if reader is None:
        return None
    try:
        return await asyncio.wait_for(reader.read(), timeout=_TIMEOUT_S)
    except Exception:  # reported as unknown; the broker's own check says why
        return None
