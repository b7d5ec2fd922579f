"""Dead letters kept in Postgres so they outlive the (in-memory) embedded broker."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

import asyncpg

from tempr.schemas.events import DeadLetter
from tempr.schemas.ids import stable_id

__all__ = ["count_pending", "list_dead_letters", "lock_dead_letter", "mark_replayed", "record_dead_letter"]


async def record_dead_letter(conn: asyncpg.Connection | asyncpg.Pool, letter: DeadLetter) -> None:
    letter_id = stable_id("dlq", letter.stage, letter.topic, letter.partition, letter.offset, letter.payload)
    await conn.execute(
        """
        INSERT INTO dead_letters (id, stage, topic, partition, "offset", key, payload, error, failed_at)
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
        ON CONFLICT (id) DO NOTHING
        """,
        letter_id,
        letter.stage,
        letter.topic,
        letter.partition,
        letter.offset,
        letter.key,
        letter.payload,
        letter.error,
        letter.failed_at,
    )


_COLUMNS = 'id, stage, topic, partition, "offset", key, payload, error, failed_at, replayed_at'


async def list_dead_letters(
    pool: asyncpg.Pool, *, limit: int = 100, offset: int = 0, replayed: bool | None = None
) -> list[dict[str, Any]]:
    """Newest first; `replayed` keeps only letters replayed (True) or not yet (False)."""
    rows = await pool.fetch(
        f"""
        SELECT {_COLUMNS} FROM dead_letters
        WHERE $3::boolean IS NULL OR (replayed_at IS NOT NULL) = $3
        ORDER BY failed_at DESC, id LIMIT $1 OFFSET $2
        """,
        limit,
        offset,
        replayed,
    )
    return [dict(r) for r in rows]


async def count_pending(pool: asyncpg.Pool) -> int:
    """Letters not replayed yet."""
    return await pool.fetchval("SELECT count(*) FROM dead_letters WHERE replayed_at IS NULL")


async def lock_dead_letter(conn: asyncpg.Connection, letter_id: UUID) -> dict[str, Any] | None:
    """The letter, locked until the transaction ends, so two replays cannot both pass a check."""
    row = await conn.fetchrow(f"SELECT {_COLUMNS} FROM dead_letters WHERE id = $1 FOR UPDATE", letter_id)
    return None if row is None else dict(row)


async def mark_replayed(conn: asyncpg.Connection, letter_id: UUID) -> datetime:
    return await conn.fetchval(
        "UPDATE dead_letters SET replayed_at = now() WHERE id = $1 RETURNING replayed_at", letter_id
    )
