"""Forgetting: a fact or messages removed with what rests on them, and tombstoned.

Every function runs inside the caller's transaction (under `bank_locks.lock_bank_for_rewrite`),
so a forget is applied whole or not at all. Tombstones keep only ids and times, never content:
the materializer, the segmenter, retain and import refuse what they name.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from uuid import UUID

import asyncpg

from tempr.schemas.events import MessageEvent
from tempr.store.entities import refresh_mention_counts

__all__ = [
    "Forgotten",
    "GraphEventAsk",
    "GraphEventCheck",
    "conversation_message_ids",
    "forget_fact",
    "forget_messages",
    "forgotten_facts_among",
    "forgotten_messages_among",
    "graph_events_check",
    "known_messages",
    "message_tombstones",
    "remove_units",
    "tombstone_facts",
]

_MESSAGE_FACT_TYPES = ["world", "experience"]


@dataclass
class Forgotten:
    facts: int = 0
    observations: int = 0
    opinions_updated: int = 0
    entities: int = 0
    chunks: int = 0
    messages: int = 0
    # Messages that shared a fact or a chunk with the forgotten ones: rebuilt without them.
    rebuild: list[tuple[int, MessageEvent]] = field(default_factory=list)


async def remove_units(conn: asyncpg.Connection, bank_id: str, unit_ids: Sequence[UUID]) -> Forgotten:
    """Delete the units (links and mentions cascade), the observations resting on them, and
    the entities nobody mentions any more; opinions keep their text and drop them as evidence."""
    ids = list(unit_ids)
    out = Forgotten()
    if not ids:
        return out
    observations = [
        r["id"]
        for r in await conn.fetch(
            """
            SELECT id FROM memory_units
            WHERE bank_id = $1 AND fact_type = 'observation' AND evidence_ids && $2::uuid[]
              AND NOT id = ANY($2::uuid[])
            """,
            bank_id,
            ids,
        )
    ]
    doomed = ids + observations
    touched = [
        r["entity_id"]
        for r in await conn.fetch(
            "SELECT DISTINCT entity_id FROM unit_entities WHERE unit_id = ANY($1::uuid[])", doomed
        )
    ]
    gone = await conn.fetch(
        "DELETE FROM memory_units WHERE bank_id = $1 AND id = ANY($2::uuid[]) RETURNING fact_type",
        bank_id,
        doomed,
    )
    out.observations = len(observations)
    out.facts = len(gone) - len(observations)
    out.opinions_updated = _count(
        await conn.execute(
            """
            UPDATE memory_units SET
                evidence_ids = ARRAY(SELECT e FROM unnest(evidence_ids) AS e WHERE NOT e = ANY($2::uuid[])),
                updated_at = now()
            WHERE bank_id = $1 AND fact_type = 'opinion' AND evidence_ids && $2::uuid[]
            """,
            bank_id,
            ids,
        )
    )
    out.entities = _count(
        await conn.execute(
            """
            DELETE FROM entities e WHERE e.id = ANY($1::uuid[])
              AND NOT EXISTS (SELECT 1 FROM unit_entities ue WHERE ue.entity_id = e.id)
            """,
            touched,
        )
    )
    await refresh_mention_counts(conn, touched)
    return out


async def forget_fact(
    conn: asyncpg.Connection, bank_id: str, unit_id: UUID, *, reason: str = "forgotten"
) -> Forgotten | None:
    """None when the bank holds no such fact (and never did: a tombstone answers as done)."""
    exists = await conn.fetchval(
        "SELECT 1 FROM memory_units WHERE bank_id = $1 AND id = $2", bank_id, unit_id
    )
    tombstoned = await conn.fetchval(
        "SELECT 1 FROM forgotten_facts WHERE bank_id = $1 AND unit_id = $2", bank_id, unit_id
    )
    if not exists and not tombstoned:
        return None
    await tombstone_facts(conn, bank_id, [unit_id], reason=reason)
    return await remove_units(conn, bank_id, [unit_id])


async def tombstone_facts(
    conn: asyncpg.Connection, bank_id: str, unit_ids: Sequence[UUID], *, reason: str
) -> None:
    """Tombstone the facts and every near-duplicate folded into them (`metadata.merged_ids`):
    a replay or redelivery re-extracts a folded statement under its own id, and with the fact
    it was folded into gone, it would otherwise be stored on its own."""
    await conn.execute(
        """
        INSERT INTO forgotten_facts (bank_id, unit_id, reason)
        SELECT $1, f.id, $3 FROM unnest($2::uuid[]) AS f(id)
        UNION
        SELECT $1, m::uuid, $3
        FROM memory_units u, jsonb_array_elements_text(coalesce(u.metadata->'merged_ids', '[]')) AS m
        WHERE u.bank_id = $1 AND u.id = ANY($2::uuid[])
        ON CONFLICT DO NOTHING
        """,
        bank_id,
        list(unit_ids),
        reason,
    )


async def conversation_message_ids(conn: asyncpg.Connection, bank_id: str, conversation_id: str) -> list[str]:
    """Every message of the conversation the journal or a fact knows of."""
    rows = await conn.fetch(
        """
        SELECT message_id FROM messages WHERE bank_id = $1 AND conversation_id = $2
        UNION
        SELECT unnest(source_message_ids) FROM memory_units
        WHERE bank_id = $1 AND conversation_id = $2 AND fact_type = ANY($3::text[])
        """,
        bank_id,
        conversation_id,
        _MESSAGE_FACT_TYPES,
    )
    return sorted(r["message_id"] for r in rows)


async def known_messages(conn: asyncpg.Connection, bank_id: str, message_ids: Sequence[str]) -> set[str]:
    """Which ids the journal, a fact or a tombstone knows in this bank."""
    rows = await conn.fetch(
        """
        SELECT message_id FROM messages WHERE bank_id = $1 AND message_id = ANY($2::text[])
        UNION SELECT message_id FROM forgotten_messages WHERE bank_id = $1 AND message_id = ANY($2::text[])
        UNION SELECT m FROM memory_units u, unnest(u.source_message_ids) AS m
              WHERE u.bank_id = $1 AND u.source_message_ids && $2::text[] AND m = ANY($2::text[])
        """,
        bank_id,
        list(message_ids),
    )
    return {r["message_id"] for r in rows}


async def forget_messages(
    conn: asyncpg.Connection,
    bank_id: str,
    message_ids: Sequence[str],
    *,
    conversation_id: str | None = None,
    reason: str = "forgotten",
) -> Forgotten:
    """Tombstone the messages, drop them from the journal, delete every fact and chunk made
    from them; the other messages those facts or chunks held are reopened for a rebuild (the
    caller publishes `rebuild` after the commit; the sweeper does if that publish fails)."""
    forgotten = sorted(set(message_ids))
    # The journal position goes with the tombstone: a token issued for the message stays reachable.
    await conn.execute(
        """
        INSERT INTO forgotten_messages (bank_id, message_id, conversation_id, reason, seq)
        SELECT $1, f.m, $3, $4, (SELECT max(j.seq) FROM messages j WHERE j.bank_id = $1 AND j.message_id = f.m)
        FROM unnest($2::text[]) AS f(m)
        ON CONFLICT DO NOTHING
        """,
        bank_id,
        forgotten,
        conversation_id,
        reason,
    )
    facts = await conn.fetch(
        """
        SELECT id, source_message_ids FROM memory_units
        WHERE bank_id = $1 AND fact_type = ANY($3::text[]) AND source_message_ids && $2::text[]
        """,
        bank_id,
        forgotten,
        _MESSAGE_FACT_TYPES,
    )
    chunks = await conn.fetch(
        "DELETE FROM chunks WHERE bank_id = $1 AND message_ids && $2::text[] RETURNING message_ids",
        bank_id,
        forgotten,
    )
    neighbours = {m for r in facts for m in r["source_message_ids"]} | {
        m for r in chunks for m in r["message_ids"]
    }
    neighbours -= set(forgotten)
    out = await remove_units(conn, bank_id, [r["id"] for r in facts])
    out.chunks = len(chunks)
    # Opinions cite messages through their evidence: they keep their text, not the citation.
    await conn.execute(
        """
        UPDATE memory_units SET
            source_message_ids = ARRAY(SELECT m FROM unnest(source_message_ids) AS m WHERE NOT m = ANY($2::text[]))
        WHERE bank_id = $1 AND fact_type = 'opinion' AND source_message_ids && $2::text[]
        """,
        bank_id,
        forgotten,
    )
    out.messages = _count(
        await conn.execute(
            "DELETE FROM messages WHERE bank_id = $1 AND message_id = ANY($2::text[])", bank_id, forgotten
        )
    )
    rows = await conn.fetch(
        """
        UPDATE messages SET processed_at = NULL, parts_done = DEFAULT, published_at = NULL, parked_at = NULL,
                            attempts = 0, crashes = 0, crashes_shared = 0, in_flight_by = NULL,
                            publish_count = 0
        WHERE bank_id = $1 AND message_id = ANY($2::text[])
        RETURNING seq, payload
        """,
        bank_id,
        sorted(neighbours),
    )
    out.rebuild = sorted((r["seq"], MessageEvent.model_validate(r["payload"])) for r in rows)
    return out


async def forgotten_messages_among(
    conn: asyncpg.Connection | asyncpg.Pool, bank_id: str, message_ids: Sequence[str]
) -> dict[str, datetime]:
    """The tombstoned ones, with when they were forgotten."""
    rows = await conn.fetch(
        "SELECT message_id, forgotten_at FROM forgotten_messages WHERE bank_id = $1 AND message_id = ANY($2::text[])",
        bank_id,
        sorted(set(message_ids)),
    )
    return {r["message_id"]: r["forgotten_at"] for r in rows}


async def forgotten_facts_among(
    conn: asyncpg.Connection | asyncpg.Pool, bank_id: str, unit_ids: Sequence[UUID]
) -> set[UUID]:
    rows = await conn.fetch(
        "SELECT unit_id FROM forgotten_facts WHERE bank_id = $1 AND unit_id = ANY($2::uuid[])",
        bank_id,
        list(set(unit_ids)),
    )
    return {r["unit_id"] for r in rows}


@dataclass(frozen=True)
class GraphEventCheck:
    """What the materializer must know about one graph event before writing it."""

    deleted_at: datetime | None  # the bank's tombstone, if it was ever deleted
    forgotten_messages: set[str]
    forgotten_facts: set[UUID]
    journaled: int  # how many of its journal rows still exist


@dataclass(frozen=True)
class GraphEventAsk:
    bank_id: str
    message_ids: Sequence[str]
    unit_ids: Sequence[UUID]
    journal_ids: Sequence[UUID]


async def graph_events_check(
    conn: asyncpg.Connection, asks: Sequence[GraphEventAsk]
) -> list[GraphEventCheck]:
    """For a batch's graph events, in one round trip: each one's bank tombstone, forgotten
    messages and facts, and surviving journal rows (a stream's batch holds one event per bank,
    so one statement per event was most of the materializer's round trips)."""
    if not asks:
        return []

    def flat(values: list[Sequence[object]]) -> tuple[list[int], list[object]]:
        # Numbered from 1, as WITH ORDINALITY numbers the events.
        pairs = [(i, v) for i, vs in enumerate(values, start=1) for v in sorted(set(vs), key=str)]
        return [i for i, _ in pairs], [v for _, v in pairs]

    said = flat([a.message_ids for a in asks])
    units = flat([a.unit_ids for a in asks])
    journal = flat([a.journal_ids for a in asks])
    rows = await conn.fetch(
        """
        WITH ev AS (SELECT i, bank_id FROM unnest($1::text[]) WITH ORDINALITY AS e(bank_id, i)),
        said AS (SELECT * FROM unnest($2::int[], $3::text[]) AS s(i, message_id)),
        units AS (SELECT * FROM unnest($4::int[], $5::uuid[]) AS u(i, unit_id)),
        journal AS (SELECT * FROM unnest($6::int[], $7::uuid[]) AS j(i, id))
        SELECT ev.i,
               d.deleted_at,
               (SELECT coalesce(array_agg(f.message_id), '{}') FROM said s
                JOIN forgotten_messages f ON f.bank_id = ev.bank_id AND f.message_id = s.message_id
                WHERE s.i = ev.i) AS messages,
               (SELECT coalesce(array_agg(f.unit_id), '{}') FROM units u
                JOIN forgotten_facts f ON f.bank_id = ev.bank_id AND f.unit_id = u.unit_id
                WHERE u.i = ev.i) AS facts,
               (SELECT count(*) FROM journal j JOIN messages m ON m.id = j.id WHERE j.i = ev.i) AS journaled
        FROM ev LEFT JOIN deleted_banks d ON d.id = ev.bank_id
        ORDER BY ev.i
        """,
        [a.bank_id for a in asks],
        *said,
        *units,
        *journal,
    )
    return [
        GraphEventCheck(
            deleted_at=r["deleted_at"],
            forgotten_messages=set(r["messages"]),
            forgotten_facts=set(r["facts"]),
            journaled=int(r["journaled"]),
        )
        for r in rows
    ]


async def message_tombstones(conn: asyncpg.Connection | asyncpg.Pool, bank_id: str) -> list[asyncpg.Record]:
    return await conn.fetch(
        "SELECT message_id, conversation_id, forgotten_at, reason FROM forgotten_messages WHERE bank_id = $1"
        " ORDER BY forgotten_at, message_id",
        bank_id,
    )


def _count(status: str) -> int:
    return int(status.split()[-1])
