"""In-flight markers on journal rows: the poison counter's evidence (migration 0009).

A stage marks the rows a record covers when it starts the record and clears them when it is
done; a marker of another worker incarnation found at the start is what a crash left behind.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from uuid import UUID

import asyncpg

__all__ = ["Leftover", "begin", "clear", "clear_worker", "mark_alone"]


@dataclass(frozen=True)
class Leftover:
    """A row another incarnation left marked: it was in flight when that worker died."""

    id: UUID
    alone: bool  # the only record in flight in that worker: the crash is counted against it
    crashes: int  # the poison counter, this crash included when `alone`
    crashes_shared: int  # crashes while not alone, this one included when not `alone`


async def begin(pool: asyncpg.Pool, ids: Sequence[UUID], worker: str, mark: str) -> list[Leftover]:
    """Mark the rows as in flight (`mark`: this worker and stage, not alone) and return those
    another incarnation had left marked, counting the crash on them: against the record if it
    was alone, as a shared crash otherwise. One statement, and a leftover is taken over by
    whichever stage sees it first, so each crash is counted once."""
    rows = await pool.fetch(
        """
        WITH prev AS (
            SELECT id, in_flight_by IS NOT NULL AND NOT starts_with(in_flight_by, $2) AS left_over,
                   in_flight_alone AS alone
            FROM messages WHERE id = ANY($1::uuid[])
            ORDER BY id FOR UPDATE
        )
        UPDATE messages m
        SET crashes = m.crashes + (prev.left_over AND prev.alone)::int,
            crashes_shared = m.crashes_shared + (prev.left_over AND NOT prev.alone)::int,
            in_flight_by = $3, in_flight_alone = false
        FROM prev WHERE m.id = prev.id
        RETURNING m.id, prev.left_over, prev.alone, m.crashes, m.crashes_shared
        """,
        list(set(ids)),
        worker,
        mark,
    )
    return [Leftover(r["id"], r["alone"], r["crashes"], r["crashes_shared"]) for r in rows if r["left_over"]]


async def mark_alone(pool: asyncpg.Pool, ids: Sequence[UUID], mark: str) -> None:
    await pool.execute(
        """
        UPDATE messages SET in_flight_by = $2, in_flight_alone = true
        WHERE id IN (SELECT id FROM messages WHERE id = ANY($1::uuid[]) ORDER BY id FOR UPDATE)
        """,
        list(set(ids)),
        mark,
    )


async def clear(pool: asyncpg.Pool, ids: Sequence[UUID], mark: str) -> None:
    """Only this stage's marks: another stage of the worker may have marked the row since."""
    await pool.execute(
        """
        UPDATE messages SET in_flight_by = NULL
        WHERE id IN (SELECT id FROM messages WHERE id = ANY($1::uuid[]) AND in_flight_by = $2
                     ORDER BY id FOR UPDATE)
        """,
        list(set(ids)),
        mark,
    )


async def clear_worker(pool: asyncpg.Pool, worker: str) -> int:
    """A clean stop: nothing this worker had in flight was its record's fault."""
    result = await pool.execute(
        "UPDATE messages SET in_flight_by = NULL WHERE in_flight_by IS NOT NULL AND starts_with(in_flight_by, $1)",
        worker,
    )
    return int(result.split()[-1])
