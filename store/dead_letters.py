"""Dead letters kept in Postgres so they outlive the (in-memory) embedded broker."""

from __future__ import annotations

import asyncpg

from schemas.events import DeadLetter
from schemas.ids import stable_id

__all__ = ["list_dead_letters", "record_dead_letter"]


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


async def list_dead_letters(pool: asyncpg.Pool, *, limit: int = 100, offset: int = 0) -> list[dict]:
    rows = await pool.fetch(
        """
        SELECT id, stage, topic, partition, "offset", key, payload, error, failed_at, replayed_at
        FROM dead_letters ORDER BY failed_at DESC, id LIMIT $1 OFFSET $2
        """,
        limit,
        offset,
    )
    return [dict(r) for r in rows]
