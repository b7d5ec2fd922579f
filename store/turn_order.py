"""Which turns sit next to a turn in its conversation: the journal's order, as the extractor
reads it (store/messages.py ``conversation_history``), so batching and timing do not change it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from uuid import UUID

import asyncpg

__all__ = ["nearby_column", "nearby_turns"]


def _neighbours(bank: str, width: str) -> str:
    """A LATERAL body: the ``width`` turns before and after ``h`` in its conversation."""
    return f"""
        (SELECT p.message_id FROM messages p
         WHERE p.bank_id = {bank} AND p.conversation_id = h.conversation_id AND p.seq < h.seq
         ORDER BY p.seq DESC LIMIT {width})
        UNION ALL
        (SELECT f.message_id FROM messages f
         WHERE f.bank_id = {bank} AND f.conversation_id = h.conversation_id AND f.seq > h.seq
         ORDER BY f.seq LIMIT {width})"""


def nearby_column(bank: str, sources: str, width: str) -> str:
    """A correlated column for a fact's hydration row: the ``width`` turns before and after
    each of its ``sources`` (a text[] expression) journaled in a conversation, NULL when none
    is. Read in the same statement as the facts, so passage context costs no round trip of its
    own; as one flat array per fact, so it costs little to decode."""
    return f"""(
        SELECT array_agg(n.message_id)
        FROM messages h CROSS JOIN LATERAL ({_neighbours(bank, width)}) n
        WHERE h.bank_id = {bank} AND h.message_id = ANY({sources}) AND h.conversation_id IS NOT NULL
    )"""


async def nearby_turns(
    conn: asyncpg.Connection | asyncpg.Pool,
    bank_id: str,
    message_ids: Sequence[str] = (),
    *,
    width: int,
    unit_ids: Sequence[UUID] = (),
) -> dict[str, list[str]]:
    """For each journaled message id of a conversation (given, or cited by the facts
    ``unit_ids``), the ids of the ``width`` turns before and after it in that conversation.
    Messages outside a conversation, or not journaled (an imported bank), have none. Recall
    reads the same through ``nearby_column`` in its hydration statement."""
    if width <= 0 or not (message_ids or unit_ids):
        return {}
    rows: list[Any] = await conn.fetch(
        f"""
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
        FROM hit h CROSS JOIN LATERAL ({_neighbours("$1", "$3")}) n
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
