"""The ingress journal: accepted messages, their publication and their materialization."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

import asyncpg

from tempr.schemas.events import MessageEvent, MessagePart

__all__ = [
    "DueEntry",
    "Receipt",
    "bank_messages",
    "conversation_history",
    "due_for_redelivery",
    "journal_from_log",
    "journal_messages",
    "mark_processed",
    "mark_published",
    "max_seq",
    "oldest_waiting_age_s",
    "pending_count",
]


async def journal_messages(conn: asyncpg.Connection, events: Sequence[MessageEvent]) -> dict[UUID, int]:
    """Insert what is new; return the journal sequence number of every event (old or new)."""
    await conn.executemany(
        """
        INSERT INTO messages (id, bank_id, message_id, conversation_id, document_id, payload)
        VALUES ($1, $2, $3, $4, $5, $6)
        ON CONFLICT (id) DO NOTHING
        """,
        [
            (
                e.event_id,
                e.bank_id,
                e.message_id,
                e.conversation_id,
                e.document_id,
                e.model_dump(mode="json"),
            )
            for e in events
        ],
    )
    rows = await conn.fetch(
        "SELECT id, seq FROM messages WHERE id = ANY($1::uuid[])", [e.event_id for e in events]
    )
    return {r["id"]: r["seq"] for r in rows}


@dataclass(frozen=True)
class Receipt:
    """What the journal says of a message the segmenter just read from the log."""

    stale: bool  # its bank was deleted after it was received
    forgotten_at: datetime | None  # tombstoned (forgotten): refused, never journaled again
    # Times the segmenter received it, this one included: the sweeper's bookkeeping, not the
    # poison counter (that counts crashes: `messages.crashes`, streams/inflight.py).
    attempts: int
    parked: bool  # dead-lettered already: not processed again until replayed


async def journal_from_log(conn: asyncpg.Connection | asyncpg.Pool, event: MessageEvent) -> Receipt:
    """Journal a message read from the topic (the API may have journaled it already) and
    count this delivery."""
    row = await conn.fetchrow(
        """
        WITH stale AS (
            SELECT EXISTS (SELECT 1 FROM deleted_banks WHERE id = $2 AND deleted_at >= $7) AS yes
        ), forgotten AS (
            SELECT (SELECT forgotten_at FROM forgotten_messages WHERE bank_id = $2 AND message_id = $3) AS at
        ), ins AS (
            INSERT INTO messages (id, bank_id, message_id, conversation_id, document_id, payload,
                                  received_at, published_at, publish_count, attempts)
            SELECT $1, $2, $3, $4, $5, $6, $7, now(), 1, 1
            WHERE NOT (SELECT yes FROM stale) AND (SELECT at FROM forgotten) IS NULL
            ON CONFLICT (id) DO UPDATE SET attempts = messages.attempts + 1
            RETURNING attempts, parked_at IS NOT NULL AS parked
        )
        SELECT (SELECT yes FROM stale) AS stale, (SELECT at FROM forgotten) AS forgotten_at,
               ins.attempts, ins.parked
        FROM (SELECT 1) AS one LEFT JOIN ins ON true
        """,
        event.event_id,
        event.bank_id,
        event.message_id,
        event.conversation_id,
        event.document_id,
        event.model_dump(mode="json"),
        event.received_at,
    )
    return Receipt(
        stale=row["stale"],
        forgotten_at=row["forgotten_at"],
        attempts=row["attempts"] or 0,
        parked=bool(row["parked"]),
    )


async def mark_published(
    conn: asyncpg.Connection | asyncpg.Pool, ids: Sequence[UUID], *, counted: bool = True
) -> None:
    """`counted`: whether this publish uses up one of the sweeper's re-publishes
    (TEMPR_MAX_ATTEMPTS); the start-up's re-publish of an empty broker's log does not."""
    await conn.execute(
        """
        UPDATE messages SET published_at = now(), publish_count = publish_count + $2
        WHERE id = ANY($1::uuid[])
        """,
        list(ids),
        int(counted),
    )


async def mark_processed(
    conn: asyncpg.Connection, ids: Sequence[UUID], parts: Sequence[MessagePart] = ()
) -> int:
    """Marks the journal rows of a materialized chunk processed; returns how many became so.

    A message cut in `parts` records each part as it lands and is processed with the last of
    them, in whatever order they come: until then it stays pending (the stats say so, and the
    sweeper redelivers it should a part be lost). A redelivered part counts once."""
    split = {p.event_id for p in parts}
    whole = [i for i in ids if i not in split]
    done = 0
    if whole:
        result = await conn.execute(
            "UPDATE messages SET processed_at = now() WHERE id = ANY($1::uuid[]) AND processed_at IS NULL",
            whole,
        )
        done += int(result.split()[-1])
    if parts:
        # The SET reads m.parts_done, so a concurrent writer's parts are re-read after its lock.
        rows = await conn.fetch(
            """
            WITH landed AS (
                SELECT id, array_agg(DISTINCT part) AS parts, max(total) AS total
                FROM unnest($1::uuid[], $2::int[], $3::int[]) AS t(id, part, total)
                GROUP BY id
            )
            UPDATE messages m SET
                parts_done = ARRAY(SELECT DISTINCT p FROM unnest(m.parts_done || l.parts) AS p ORDER BY p),
                processed_at = CASE
                    WHEN (SELECT count(DISTINCT p) FROM unnest(m.parts_done || l.parts) AS p) >= l.total
                    THEN now()
                END
            FROM landed l
            WHERE m.id = l.id AND m.processed_at IS NULL
            RETURNING m.processed_at
            """,
            [p.event_id for p in parts],
            [p.part for p in parts],
            [p.parts for p in parts],
        )
        done += sum(1 for r in rows if r["processed_at"] is not None)
    return done


@dataclass(frozen=True)
class DueEntry:
    seq: int
    event_id: UUID
    payload: dict[str, Any]  # validated by the caller: a row that no longer validates is parked there
    publish_count: int


async def due_for_redelivery(
    pool: asyncpg.Pool | asyncpg.Connection,
    *,
    older_than_s: float,
    unpublished_after_s: float,
    queued_after_s: float | None = None,
    after_seq: int = 0,
    limit: int = 1000,
) -> list[DueEntry]:
    """Entries really stalled, never those in progress:

    - published longer ago than ``older_than_s``, received by the segmenter since (its
      ``attempts`` caught up with ``publish_count``), and passed by the pipeline: a later entry
      of its bank was materialized, or none received within ``older_than_s`` after it is still
      waiting. Lost or failed downstream, then. Without that last condition, a backlog older
      than ``older_than_s`` (every topic is keyed by bank, so a bank's entries are
      materialized in order) was re-published whole, every sweep: in a ten-minute stream that
      doubled the worker's load just when it was behind;
    - published longer ago than ``queued_after_s`` (default ten times ``older_than_s``) and
      still not received: lost on the way, since a queue that old is not merely slow;
    - journaled more than ``unpublished_after_s`` ago and not published yet. This bound
      leaves the API time to finish the publish it started right after journaling.

    Parked entries (dead-lettered) and deleted banks' entries are never due."""
    queued = older_than_s * 10 if queued_after_s is None else queued_after_s
    rows = await pool.fetch(
        """
        SELECT seq, id, payload, publish_count FROM messages m
        WHERE processed_at IS NULL AND parked_at IS NULL AND seq > $3
          AND ((published_at <= now() - make_interval(secs => $1) AND attempts >= publish_count
                AND (EXISTS (SELECT 1 FROM messages l
                             WHERE l.bank_id = m.bank_id AND l.seq > m.seq AND l.processed_at IS NOT NULL)
                     OR NOT EXISTS (SELECT 1 FROM messages w
                                    WHERE w.processed_at IS NULL AND w.parked_at IS NULL AND w.id <> m.id
                                      AND w.received_at > m.received_at
                                      AND w.received_at <= m.received_at + make_interval(secs => $1))))
               OR (published_at <= now() - make_interval(secs => $5) AND attempts < publish_count)
               OR (published_at IS NULL AND received_at <= now() - make_interval(secs => $4)))
          AND bank_id NOT IN (SELECT id FROM deleted_banks)
        ORDER BY seq
        LIMIT $2
        """,
        older_than_s,
        limit,
        after_seq,
        unpublished_after_s,
        queued,
    )
    return [DueEntry(r["seq"], r["id"], r["payload"], r["publish_count"]) for r in rows]


async def pending_count(pool: asyncpg.Pool, bank_id: str | None = None) -> int:
    """Accepted, not materialized and not parked in the dead letters."""
    if bank_id is None:
        return await pool.fetchval(
            "SELECT count(*) FROM messages WHERE processed_at IS NULL AND parked_at IS NULL"
        )
    return await pool.fetchval(
        "SELECT count(*) FROM messages WHERE processed_at IS NULL AND parked_at IS NULL AND bank_id = $1",
        bank_id,
    )


async def oldest_waiting_age_s(pool: asyncpg.Pool) -> float | None:
    """Age of the oldest message accepted and not yet materialized (parked ones aside)."""
    return await pool.fetchval(
        """
        SELECT extract(epoch FROM now() - min(received_at))::float8 FROM messages
        WHERE processed_at IS NULL AND parked_at IS NULL
        """
    )


async def max_seq(pool: asyncpg.Pool | asyncpg.Connection, bank_id: str) -> int:
    """The bank's journal head. A forgotten message keeps its place: a token issued for it
    counts as reached (nothing is pending there any more) rather than waiting for a row that
    is gone."""
    return await pool.fetchval(
        """
        SELECT greatest((SELECT coalesce(max(seq), 0) FROM messages WHERE bank_id = $1),
                        (SELECT coalesce(max(seq), 0) FROM forgotten_messages WHERE bank_id = $1))
        """,
        bank_id,
    )


async def bank_messages(
    pool: asyncpg.Pool, bank_id: str, *, after_seq: int = 0, limit: int = 1000
) -> list[tuple[int, MessageEvent]]:
    rows = await pool.fetch(
        "SELECT seq, payload FROM messages WHERE bank_id = $1 AND seq > $2 ORDER BY seq LIMIT $3",
        bank_id,
        after_seq,
        limit,
    )
    return [(r["seq"], MessageEvent.model_validate(r["payload"])) for r in rows]


async def conversation_history(
    conn: asyncpg.Connection | asyncpg.Pool,
    bank_id: str,
    conversation_id: str,
    event_ids: Sequence[UUID],
    *,
    before: int,
) -> list[MessageEvent]:
    """A conversation's journaled turns in journal order, from ``before`` turns ahead of the
    earliest of ``event_ids`` to the latest of them: what a chunk's turns are read against,
    whatever chunk the earlier turns came in. Turns journaled later are never included."""
    rows = await conn.fetch(
        """
        WITH chunk AS (
            SELECT min(seq) AS lo, max(seq) AS hi FROM messages
            WHERE bank_id = $1 AND id = ANY($3::uuid[])
        ),
        earlier AS (
            SELECT m.seq FROM messages m, chunk
            WHERE m.bank_id = $1 AND m.conversation_id = $2 AND m.seq < chunk.lo
            ORDER BY m.seq DESC
            LIMIT $4
        )
        SELECT m.payload FROM messages m, chunk
        WHERE m.bank_id = $1 AND m.conversation_id = $2
          AND m.seq >= coalesce((SELECT min(seq) FROM earlier), chunk.lo) AND m.seq <= chunk.hi
        ORDER BY m.seq
        """,
        bank_id,
        conversation_id,
        list(event_ids),
        before,
    )
    return [MessageEvent.model_validate(r["payload"]) for r in rows]
