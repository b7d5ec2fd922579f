"""Which turns sit next to a turn in its conversation: the journal's order, as the extractor
reads it (store/messages.py ``conversation_history``), so batching and timing do not change it."""

from __future__ import annotations

from collections.abc import Sequence
from uuid import UUID

import asyncpg

__all__ = ["nearby_turns"]


async def nearby_turns(
    conn: asyncpg.Connection | asyncpg.Pool,
    bank_id: str,
    message_ids: Sequence[str] = (),
    *,
    width: int,
    unit_ids: Sequence[UUID] = (),
) -> dict[str, list[str]]:
    """For each journaled message id of a conversation (given, or cited by the facts
    ``unit_ids``: so recall can ask while it fetches those facts), the ids of the ``width``
    turns before and after it in that conversation. Messages outside a conversation, or not
    journaled (an imported bank), have none."""
    if width <= 0 or not (message_ids or unit_ids):
        return {}
    rows = await conn.fetch(
        """
        WITH wanted AS (
            SELECT unnest($2::text[]) AS message_id
            UNION
            SELECT unnest(u.source_message_ids) FROM memory_units u
            WHERE u.bank_id = $1 AND u.id = ANY($4::uuid[])
        ),
        hit AS (
            SELECT m.message_id, m.conversation_id, m.seq FROM messages m
            WHERE m.bank_id = $1 AND m.message_id IN (SELECT message_id FROM wanted)
              AND m.conversation_id IS NOT NULL
        )
        SELECT h.message_id, n.message_id AS near
        FROM hit h
        CROSS JOIN LATERAL (
            (SELECT p.message_id FROM messages p
             WHERE p.bank_id = $1 AND p.conversation_id = h.conversation_id AND p.seq < h.seq
             ORDER BY p.seq DESC LIMIT $3)
            UNION ALL
            (SELECT f.message_id FROM messages f
             WHERE f.bank_id = $1 AND f.conversation_id = h.conversation_id AND f.seq > h.seq
             ORDER BY f.seq LIMIT $3)
        ) n
        """,
        bank_id,
        list(dict.fromkeys(message_ids)),
        width,
        list(unit_ids),
    )
    out: dict[str, list[str]] = {}
    for r in rows:
        out.setdefault(r["message_id"], []).append(r["near"])
    return out
