"""Publish conversation turns straight to tempr's Kafka topic, for chat platforms.

The events, keys and ids are exactly those of `POST /v1/banks/{b}/memories`, so a message
resent by the platform (or sent once here and once through the API) is the same event and
its facts are stored once.

    async with TemprProducer("127.0.0.1:9092") as producer:
        deliveries = await producer.send("alice", [{"content": "I moved to Lisbon.", "speaker": "Alice",
                                                     "conversation_id": "c1", "message_id": "m1"}])
        print(deliveries[0].partition, deliveries[0].offset)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from types import TracebackType
from typing import Any, Self
from uuid import UUID

from aiokafka import AIOKafkaProducer

from schemas.api import RetainItem
from schemas.events import EndOfConversation, MessageEvent, encode_event
from schemas.retain import to_message_event
from streams.topics import MESSAGES, conversation_key, event_headers, message_key

__all__ = ["Delivery", "TemprProducer"]

# The embedded broker (Tansu) does not implement the idempotent producer; duplicates a retry
# may create are absorbed downstream by the deterministic ids.
_DEFAULT_OPTIONS: dict[str, Any] = {
    "enable_idempotence": False,
    "acks": "all",
    "linger_ms": 5,
    "request_timeout_ms": 15000,
}


@dataclass(frozen=True)
class Delivery:
    """Where the broker stored one record: proof that it was accepted (acks=all)."""

    event_id: UUID | None
    message_id: str | None
    topic: str
    partition: int
    offset: int


class TemprProducer:
    """An async producer of tempr message events over aiokafka.

    `producer_options` go to `AIOKafkaProducer` (e.g. `security_protocol`, `sasl_mechanism`)
    and override the defaults (`acks="all"`, no idempotence, 5 ms linger).
    """

    def __init__(self, bootstrap_servers: str, **producer_options: Any) -> None:
        self._producer = AIOKafkaProducer(
            bootstrap_servers=bootstrap_servers, **{**_DEFAULT_OPTIONS, **producer_options}
        )

    async def start(self) -> None:
        await self._producer.start()

    async def stop(self) -> None:
        await self._producer.stop()

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()

    async def send(
        self,
        bank_id: str,
        items: Iterable[RetainItem | Mapping[str, Any]],
        *,
        received_at: datetime | None = None,
    ) -> list[Delivery]:
        """Publish every item, then wait for all acknowledgements; one `Delivery` per item.

        Items are validated like the API's (`RetainItem`); a bad one raises
        `pydantic.ValidationError` before anything is sent.
        """
        now = received_at or datetime.now(UTC)
        events = [to_message_event(bank_id, RetainItem.model_validate(item), now) for item in items]
        return await self.send_events(events)

    async def send_events(self, events: Iterable[MessageEvent]) -> list[Delivery]:
        """Publish already-built events (batched: all sends first, then all acknowledgements)."""
        pending = [
            (
                event,
                await self._producer.send(
                    MESSAGES.name,
                    value=encode_event(event),
                    key=message_key(event.bank_id, event.conversation_id, event.document_id),
                    headers=event_headers(event.event_type, event.schema_version),
                ),
            )
            for event in events
        ]
        deliveries = []
        for event, future in pending:
            meta = await future
            deliveries.append(
                Delivery(event.event_id, event.message_id, meta.topic, meta.partition, meta.offset)
            )
        return deliveries

    async def end_conversation(self, bank_id: str, conversation_id: str) -> Delivery:
        """Tell the segmenter the conversation paused: its buffered turns become a chunk now."""
        event = EndOfConversation(bank_id=bank_id, conversation_id=conversation_id)
        meta = await (
            await self._producer.send(
                MESSAGES.name,
                value=encode_event(event),
                key=conversation_key(bank_id, conversation_id),
                headers=event_headers(event.event_type, event.schema_version),
            )
        )
        return Delivery(None, None, meta.topic, meta.partition, meta.offset)
