"""Publishing accepted messages: the journal first, then the broker.

Used by the API (retain), by the redelivery sweeper and by `tempr up` at start-up. The
producer is idempotent when the broker gives producer ids (Apache Kafka), not on Tansu;
either way the duplicates a retry may create are absorbed downstream by deterministic ids.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import asyncpg
from aiokafka import AIOKafkaProducer
from aiokafka.errors import MessageSizeTooLargeError
from aiokafka.structs import RecordMetadata
from pydantic import ValidationError

from tempr.schemas.events import (
    BankDeleted,
    DeadLetter,
    FactCorrection,
    FactsEvent,
    MessageEvent,
    encode_event,
)
from tempr.store import banks, corrections, messages
from tempr.store.dead_letters import record_dead_letter
from tempr.streams.broker_features import detect_features
from tempr.streams.control import sign_tombstone
from tempr.streams.topics import (
    CHUNKS,
    FACTS,
    MESSAGES,
    bank_key,
    conversation_key,
    event_headers,
    message_key,
)

__all__ = [
    "PRODUCER_OPTIONS",
    "PUBLISH_IN_FLIGHT_S",
    "UNPUBLISHABLE",
    "PublishedMessage",
    "Publisher",
    "create_producer",
    "send_messages",
    "start_producer",
]

log = logging.getLogger(__name__)


# Idempotence is switched on by `start_producer` where the broker supports it (detected).
PRODUCER_OPTIONS: dict[str, Any] = {
    "enable_idempotence": False,
    "acks": "all",
    "linger_ms": 5,
    "request_timeout_ms": 15000,
}


# A journaled entry not yet marked published is most likely being published right now by the
# request that journaled it. The sweeper leaves it alone this long (twice the producer's
# request timeout) before taking over; otherwise a sweep landing mid-publish sends it twice.
PUBLISH_IN_FLIGHT_S = 2 * PRODUCER_OPTIONS["request_timeout_ms"] / 1000


# Options of a producer that its client needs to reach the broker at all (security).
_CONNECTION_OPTIONS = ("security_protocol", "ssl_context", "client_id", "connections_max_idle_ms")

# Errors that no retry fixes: the record itself is the problem.
UNPUBLISHABLE: tuple[type[BaseException], ...] = (MessageSizeTooLargeError, ValueError, TypeError)


def create_producer(bootstrap: str, **overrides: Any) -> AIOKafkaProducer:
    return AIOKafkaProducer(bootstrap_servers=bootstrap, **(PRODUCER_OPTIONS | overrides))


async def start_producer(bootstrap: str, **overrides: Any) -> AIOKafkaProducer:
    """A started producer, idempotent if the broker gives producer ids (unless `overrides`
    say otherwise)."""
    if "enable_idempotence" not in overrides:
        connection = {k: v for k, v in overrides.items() if k in _CONNECTION_OPTIONS or k.startswith("sasl_")}
        features = await detect_features(bootstrap, **connection)
        overrides = features.producer_options() | overrides
    producer = create_producer(bootstrap, **overrides)
    await producer.start()
    return producer


async def send_messages(producer: AIOKafkaProducer, events: Sequence[MessageEvent]) -> list[RecordMetadata]:
    """Every event to the messages topic with its key and headers: all sends first (they
    batch), then every acknowledgement, in order."""
    futures = [
        await producer.send(
            MESSAGES.name,
            value=encode_event(e),
            key=message_key(e.bank_id, e.conversation_id, e.document_id),
            headers=event_headers(e.event_type, e.schema_version),
        )
        for e in events
    ]
    return [await f for f in futures]


@dataclass(frozen=True)
class PublishedMessage:
    event_id: str
    journal_seq: int
    partition: int | None
    offset: int | None


class Publisher:
    def __init__(
        self, pool: asyncpg.Pool, producer: AIOKafkaProducer, *, control_key: bytes | None = None
    ) -> None:
        self.pool = pool
        self.producer = producer
        self.control_key = control_key

    async def accept(self, events: Sequence[MessageEvent]) -> list[PublishedMessage]:
        """Journal (durable), then publish. A broker failure still leaves the events accepted."""
        async with self.pool.acquire() as conn, conn.transaction():
            await banks.ensure_banks(conn, [e.bank_id for e in events])
            seqs = await messages.journal_messages(conn, events)
        placed: dict[str, tuple[int, int]] = {}
        try:
            placed = await self.publish(events)
        except Exception as exc:  # the sweeper publishes it later
            log.warning("broker publish failed, journaled for redelivery: %r", exc)
        return [
            PublishedMessage(
                event_id=str(e.event_id),
                journal_seq=seqs[e.event_id],
                partition=placed.get(str(e.event_id), (None, None))[0],
                offset=placed.get(str(e.event_id), (None, None))[1],
            )
            for e in events
        ]

    async def publish(
        self, events: Sequence[MessageEvent], *, counted: bool = True
    ) -> dict[str, tuple[int, int]]:
        metas = await send_messages(self.producer, events)
        placed = {str(e.event_id): (m.partition, m.offset) for e, m in zip(events, metas, strict=True)}
        await messages.mark_published(self.pool, [e.event_id for e in events], counted=counted)
        return placed

    async def publish_facts(self, event: FactsEvent) -> None:
        """Derived facts (reflect's opinions) enter the log at the resolver; waits for the ack."""
        await (await self.producer.send(FACTS.name, value=encode_event(event), key=bank_key(event.bank_id)))

    async def publish_corrections(self, due: Sequence[corrections.Correction]) -> None:
        """Each to the extractor, keyed like its fact's conversation (so corrections of one fact
        stay in order), then marked published; waits for every acknowledgement."""
        futures = [
            await self.producer.send(
                CHUNKS.name,
                value=encode_event(FactCorrection(bank_id=c.bank_id, correction_id=c.id, unit_id=c.unit_id)),
                key=conversation_key(c.bank_id, c.conversation_id),
                headers=event_headers("fact_correction", 1),
            )
            for c in due
        ]
        for future in futures:
            await future
        await corrections.mark_published(self.pool, [c.id for c in due])

    async def publish_tombstone(self, event: BankDeleted) -> None:
        """On the messages topic, so every stage downstream sees it after the bank's turns;
        signed, or the segmenter refuses it."""
        assert self.control_key is not None, "a publisher of control events needs the control key"
        signed = sign_tombstone(event, self.control_key)
        await (
            await self.producer.send(
                MESSAGES.name, value=encode_event(signed), key=conversation_key(event.bank_id, None)
            )
        )

    async def redeliver(
        self, *, older_than_s: float, max_publishes: int | None = None, limit: int = 1000
    ) -> int:
        """Re-publish journal entries that stalled before being materialized; returns how many.

        Never blocks on one entry: one that no longer validates, cannot be published (too
        large for the broker) or was published `max_publishes` times already is parked with
        a dead letter instead. A broker that is down raises (the next sweep tries again).
        With no `max_publishes` (the start-up's re-publish of an empty broker's log, which is
        no fault of the entries) the publishes are not counted either."""
        total, cursor = 0, 0
        while True:
            due = await messages.due_for_redelivery(
                self.pool,
                older_than_s=older_than_s,
                unpublished_after_s=min(older_than_s, PUBLISH_IN_FLIGHT_S),
                after_seq=cursor,
                limit=limit,
            )
            if not due:
                return total
            cursor = due[-1].seq
            events: list[MessageEvent] = []
            for entry in due:
                if max_publishes is not None and entry.publish_count >= max_publishes:
                    await self._park(
                        entry,
                        f"published {entry.publish_count} times without being materialized "
                        f"(TEMPR_MAX_ATTEMPTS={max_publishes}); parked",
                    )
                    continue
                try:
                    events.append(MessageEvent.model_validate(entry.payload))
                except ValidationError as exc:
                    await self._park(entry, f"the journaled message is no longer valid: {exc}")
            try:
                await self.publish(events, counted=max_publishes is not None)
            except Exception as exc:
                if not events:
                    raise
                log.warning("re-publishing %d entries failed (%r); one at a time", len(events), exc)
                for event in events:
                    try:
                        await self.publish([event], counted=max_publishes is not None)
                    except UNPUBLISHABLE as one_exc:
                        entry = next(e for e in due if e.event_id == event.event_id)
                        await self._park(entry, f"cannot be published: {one_exc!r}")
                        events = [e for e in events if e is not event]
            total += len(events)

    async def _park(self, entry: messages.DueEntry, reason: str) -> None:
        """A dead letter stored directly (it may be too large for the DLQ topic too); storing
        it parks the journal row."""
        payload = json.dumps(entry.payload, ensure_ascii=False)
        letter = DeadLetter(
            stage="redelivery",
            topic=MESSAGES.name,
            payload=payload,
            error=reason[:4000],
            failed_at=datetime.now(UTC),
            message_event_ids=[entry.event_id],
        )
        log.warning("parking journal entry %s: %s", entry.event_id, reason)
        await record_dead_letter(self.pool, letter)
