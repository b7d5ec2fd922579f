"""Replaying a bank: which journaled messages go again, and clearing what they produced.

Everything here runs inside the caller's transaction, so a replay either clears its derived
rows and reopens its journal entries together, or changes nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

import asyncpg

from tempr.schemas.events import MessageEvent
from tempr.store.entities import refresh_mention_counts

__all__ = [
    "Cleared",
    "bank_known",
    "clear_derived",
    "live_banks",
    "lock_bank_replay",
    "messages_to_replay",
    "reopen_messages",
]

# Facts made from messages; opinions (from reflect) and observations (from facts) are not.
_MESSAGE_FACT_TYPES = ["world", "experience"]


@dataclass(frozen=True)
class Cleared:
    facts: int
    observations: int
    entities: int
    chunks: int


async def bank_known(conn: asyncpg.Connection, bank_id: str) -> bool:
    return await conn.fetchval(
        """
        SELECT EXISTS (SELECT 1 FROM banks WHERE id = $1)
           AND NOT EXISTS (SELECT 1 FROM deleted_banks WHERE id = $1)
        """,
        bank_id,
    )


async def live_banks(conn: asyncpg.Connection) -> list[str]:
    """Every bank not deleted, for replaying them all (a change of embedding model)."""
    rows = await conn.fetch("SELECT id FROM banks WHERE id NOT IN (SELECT id FROM deleted_banks) ORDER BY id")
    return [r["id"] for r in rows]


async def lock_bank_replay(conn: asyncpg.Connection, bank_id: str) -> None:
    """Two replays of one bank run one after the other (until the transaction ends)."""
    await conn.execute("SELECT pg_advisory_xact_lock(hashtextextended('tempr.replay:' || $1, 0))", bank_id)


async def messages_to_replay(
    conn: asyncpg.Connection, bank_id: str, since: datetime | None
) -> list[tuple[int, MessageEvent]]:
    """Messages journaled at or after `since` (all without it), closed over shared facts.

    A fact can cite several messages (a reply and the turn it answers, a near-duplicate
    merged into another); rebuilding it needs all of them, so every message cited together
    with a replayed one is replayed too, transitively. Returned in journal order.
    """
    rows = await conn.fetch(
        """
        WITH RECURSIVE replayed(message_id) AS (
            SELECT message_id FROM messages
            WHERE bank_id = $1 AND ($2::timestamptz IS NULL OR received_at >= $2)
          UNION
            SELECT cited.message_id
            FROM replayed r
            JOIN memory_units u ON u.bank_id = $1 AND u.fact_type = ANY($3::text[])
                               AND r.message_id = ANY(u.source_message_ids)
            CROSS JOIN LATERAL unnest(u.source_message_ids) AS cited(message_id)
        )
        SELECT m.seq, m.payload FROM messages m
        WHERE m.bank_id = $1 AND m.message_id IN (SELECT message_id FROM replayed)
        ORDER BY m.seq
        """,
        bank_id,
        since,
        _MESSAGE_FACT_TYPES,
    )
    return [(r["seq"], MessageEvent.model_validate(r["payload"])) for r in rows]


async def clear_derived(conn: asyncpg.Connection, bank_id: str, message_ids: Sequence[str]) -> Cleared:
    """Delete the facts made from these messages (their links and mentions cascade), the
    observations resting on those facts, then entities and chunks nothing refers to any more.
    Opinions stay: they come from reflect, and their evidence ids come back with the facts."""
    message_ids = list(message_ids)
    touched_entities = await conn.fetch(
        """
        SELECT DISTINCT ue.entity_id FROM unit_entities ue
        JOIN memory_units u ON u.id = ue.unit_id
        WHERE u.bank_id = $1 AND u.fact_type = ANY($3::text[]) AND u.source_message_ids && $2::text[]
        """,
        bank_id,
        message_ids,
        _MESSAGE_FACT_TYPES,
    )
    removed: list[UUID] = [
        r["id"]
        for r in await conn.fetch(
            """
            DELETE FROM memory_units
            WHERE bank_id = $1 AND fact_type = ANY($3::text[]) AND source_message_ids && $2::text[]
            RETURNING id
            """,
            bank_id,
            message_ids,
            _MESSAGE_FACT_TYPES,
        )
    ]
    observations = await conn.execute(
        """
        DELETE FROM memory_units
        WHERE bank_id = $1 AND fact_type = 'observation'
          AND (evidence_ids && $2::uuid[] OR source_message_ids && $3::text[])
        """,
        bank_id,
        removed,
        message_ids,
    )
    entity_ids = [r["entity_id"] for r in touched_entities]
    entities = await conn.execute(
        """
        DELETE FROM entities e
        WHERE e.id = ANY($1::uuid[])
          AND NOT EXISTS (SELECT 1 FROM unit_entities ue WHERE ue.entity_id = e.id)
        """,
        entity_ids,
    )
    await refresh_mention_counts(conn, entity_ids)
    chunks = await conn.execute(
        """
        DELETE FROM chunks c
        WHERE c.bank_id = $1 AND c.message_ids && $2::text[]
          AND NOT EXISTS (SELECT 1 FROM memory_units u WHERE u.chunk_id = c.id)
        """,
        bank_id,
        message_ids,
    )
    return Cleared(
        facts=len(removed),
        observations=_count(observations),
        entities=_count(entities),
        chunks=_count(chunks),
    )


async def reopen_messages(conn: asyncpg.Connection, ids: Sequence[UUID]) -> None:
    """Not materialized, not published: the stats count them as pending until rebuilt, and
    the sweeper publishes them again should the replay's own publish fail."""
    await conn.execute(
        "UPDATE messages SET processed_at = NULL, parts_done = DEFAULT, published_at = NULL, parked_at = NULL,"
        " attempts = 0, crashes = 0, crashes_shared = 0, in_flight_by = NULL,"
        " publish_count = 0"
        " WHERE id = ANY($1::uuid[])",
        list(ids),
    )


def _count(status: str) -> int:
    return int(status.split()[-1])
