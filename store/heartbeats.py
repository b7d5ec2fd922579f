"""Stage heartbeats (written by the worker's stage harness, read by /health and /metrics)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

import asyncpg

__all__ = ["Beat", "StageState", "beat", "stage_states"]


@dataclass(frozen=True)
class Beat:
    stage: str
    worker: str
    busy_since: float | None
    processed: int
    failed: int


@dataclass(frozen=True)
class StageState:
    stage: str
    beat_age_s: float  # since the freshest beat of any worker running the stage
    busy_s: float | None  # how long the stage has been on its current batch
    processed: int
    failed: int


async def beat(pool: asyncpg.Pool, beats: list[Beat]) -> None:
    """Upsert this worker's rows; rows of workers gone for an hour are dropped."""
    await pool.executemany(
        """
        INSERT INTO stage_heartbeats AS h (stage, worker, beat_at, busy_since, processed, failed)
        VALUES ($1, $2, now(), $3, $4, $5)
        ON CONFLICT (stage, worker) DO UPDATE
        SET beat_at = now(), busy_since = $3, processed = $4, failed = $5
        """,
        [
            (
                b.stage,
                b.worker,
                None if b.busy_since is None else datetime.fromtimestamp(b.busy_since, UTC),
                b.processed,
                b.failed,
            )
            for b in beats
        ],
    )
    # Rows of workers gone for an hour, and of stages no worker runs any more (an LLM
    # switched off), would read as dead stages forever.
    await pool.execute(
        """
        DELETE FROM stage_heartbeats
        WHERE beat_at < now() - interval '1 hour'
           OR (stage <> ALL($1::text[]) AND beat_at < now() - interval '1 minute')
        """,
        sorted({b.stage for b in beats}),
    )


async def stage_states(pool: asyncpg.Pool) -> list[StageState]:
    """Per stage, the freshest worker's beat (another worker's stale row is a dead replica)."""
    rows = await pool.fetch(
        """
        SELECT DISTINCT ON (stage) stage,
               extract(epoch FROM now() - beat_at)::float8 AS beat_age_s,
               extract(epoch FROM now() - busy_since)::float8 AS busy_s,
               processed, failed
        FROM stage_heartbeats
        ORDER BY stage, beat_at DESC
        """
    )
    return [StageState(**dict(r)) for r in rows]
