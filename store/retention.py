"""Retention: what a bank keeps no longer, forgotten in batches with the same tombstones as by hand.

Each call runs inside the caller's transaction (under the bank's rewrite lock) and handles at
most `limit` rows, so a large backlog is swept in many short transactions.
"""

from __future__ import annotations

import asyncpg

from tempr.store.forget import Forgotten, remove_units, tombstone_facts

__all__ = ["RETENTION_LOCK", "banks_with_retention", "expire_facts", "expire_messages"]

# One sweeper at a time across every worker replica (a session advisory lock).
RETENTION_LOCK = 0x7E3B_0019


async def banks_with_retention(conn: asyncpg.Connection | asyncpg.Pool) -> list[asyncpg.Record]:
    """(id, message_days, fact_days) of every live bank with a retention set."""
    return await conn.fetch(
        """
        SELECT id, (config->>'message_retention_days')::int AS message_days,
               (config->>'fact_retention_days')::int AS fact_days
        FROM banks
        WHERE (config->>'message_retention_days' IS NOT NULL OR config->>'fact_retention_days' IS NOT NULL)
          AND id NOT IN (SELECT id FROM deleted_banks)
        ORDER BY id
        """
    )


async def expire_messages(
    conn: asyncpg.Connection, bank_id: str, days: int, *, limit: int = 1000
) -> Forgotten:
    """Raw messages accepted more than `days` ago and done with (materialized or parked): the
    journal rows and the chunks holding them go, tombstones stay; the facts made from them stay."""
    expired = await conn.fetch(
        """
        SELECT message_id, conversation_id, seq FROM messages
        WHERE bank_id = $1 AND received_at < now() - make_interval(days => $2)
          AND (processed_at IS NOT NULL OR parked_at IS NOT NULL)
        ORDER BY seq LIMIT $3
        """,
        bank_id,
        days,
        limit,
    )
    out = Forgotten()
    if not expired:
        return out
    ids = [r["message_id"] for r in expired]
    await conn.executemany(
        """
        INSERT INTO forgotten_messages (bank_id, message_id, conversation_id, reason, seq)
        VALUES ($1, $2, $3, 'retention', $4) ON CONFLICT DO NOTHING
        """,
        [(bank_id, r["message_id"], r["conversation_id"], r["seq"]) for r in expired],
    )
    out.chunks = _count(
        await conn.execute(
            "DELETE FROM chunks WHERE bank_id = $1 AND message_ids && $2::text[]", bank_id, ids
        )
    )
    out.messages = _count(
        await conn.execute(
            "DELETE FROM messages WHERE bank_id = $1 AND message_id = ANY($2::text[])", bank_id, ids
        )
    )
    return out


async def expire_facts(conn: asyncpg.Connection, bank_id: str, days: int, *, limit: int = 1000) -> Forgotten:
    """Facts stored more than `days` ago, forgotten as `DELETE .../memories/{id}` forgets one."""
    ids = [
        r["id"]
        for r in await conn.fetch(
            """
            SELECT id FROM memory_units
            WHERE bank_id = $1 AND created_at < now() - make_interval(days => $2)
            ORDER BY created_at, id LIMIT $3
            """,
            bank_id,
            days,
            limit,
        )
    ]
    await tombstone_facts(conn, bank_id, ids, reason="retention")
    return await remove_units(conn, bank_id, ids)


def _count(status: str) -> int:
    return int(status.split()[-1])
