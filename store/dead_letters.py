"""Dead letters kept in Postgres so they outlive the (in-memory) embedded broker."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any
from uuid import UUID

import asyncpg

from tempr.schemas.events import DeadLetter
from tempr.schemas.ids import stable_id
from tempr.store.keys import bank_visible

__all__ = [
    "LETTER_BANK",
    "count_pending",
    "list_dead_letters",
    "lock_dead_letter",
    "mark_replayed",
    "record_dead_letter",
    "safe_text",
]


def safe_text(text: str) -> str:
    """Postgres text holds no NUL (binary garbage from Kafka has them): shown escaped."""
    return text.replace("\x00", "\\x00")


async def record_dead_letter(conn: asyncpg.Connection | asyncpg.Pool, letter: DeadLetter) -> None:
    """Idempotent; the journal rows the letter covers are parked in the same statement, so the
    sweeper stops re-publishing them and they no longer count as pending."""
    letter_id = stable_id("dlq", letter.stage, letter.topic, letter.partition, letter.offset, letter.payload)
    await conn.execute(
        """
        WITH letter AS (
            INSERT INTO dead_letters (id, stage, topic, partition, "offset", key, payload, error,
                                      failed_at, message_event_ids)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
            ON CONFLICT (id) DO NOTHING
        )
        UPDATE messages SET parked_at = coalesce(parked_at, $9)
        WHERE id = ANY($10::uuid[]) AND processed_at IS NULL
        """,
        letter_id,
        letter.stage,
        letter.topic,
        letter.partition,
        letter.offset,
        None if letter.key is None else safe_text(letter.key),
        safe_text(letter.payload),
        safe_text(letter.error),
        letter.failed_at,
        letter.message_event_ids,
    )


# Every record key starts with its bank id ("bank" or "bank/conversation"; ids hold no '/').
LETTER_BANK = "split_part(key, '/', 1)"

_COLUMNS = 'id, stage, topic, partition, "offset", key, payload, error, failed_at, replayed_at'


async def list_dead_letters(
    pool: asyncpg.Pool,
    *,
    limit: int = 100,
    offset: int = 0,
    replayed: bool | None = None,
    visible: Sequence[str] | None = None,
) -> list[dict[str, Any]]:
    """Newest first; `replayed` keeps only letters replayed (True) or not yet (False);
    `visible` (bank patterns) only letters whose key names one of those banks."""
    rows = await pool.fetch(
        f"""
        SELECT {_COLUMNS} FROM dead_letters
        WHERE ($3::boolean IS NULL OR (replayed_at IS NOT NULL) = $3)
          AND ($4::text[] IS NULL OR (key IS NOT NULL AND {bank_visible(LETTER_BANK, 4)}))
        ORDER BY failed_at DESC, id LIMIT $1 OFFSET $2
        """,
        limit,
        offset,
        replayed,
        None if visible is None else list(visible),
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
    """Also un-parks the journal rows the letter covers: the replay is a fresh set of attempts."""
    return await conn.fetchval(
        """
        WITH replayed AS (
            UPDATE dead_letters SET replayed_at = now() WHERE id = $1
            RETURNING replayed_at, message_event_ids
        ), unparked AS (
            UPDATE messages SET parked_at = NULL, attempts = 0, crashes = 0, crashes_shared = 0,
                                in_flight_by = NULL, publish_count = 0
            WHERE id = ANY((SELECT message_event_ids FROM replayed)::uuid[]) AND processed_at IS NULL
        )
        SELECT replayed_at FROM replayed
        """,
        letter_id,
    )
