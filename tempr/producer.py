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

from tempr.schemas.api import RetainItem
from tempr.schemas.events import EndOfConversation, MessageEvent, encode_event
from tempr.schemas.retain import to_message_event
from tempr.settings import Settings
from tempr.streams.kafka_security import kafka_client_options
from tempr.streams.publisher import send_messages, start_producer
from tempr.streams.topics import MESSAGES, conversation_key, event_headers

__all__ = ["Delivery", "TemprProducer"]


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
    and override the defaults (`acks="all"`, 5 ms linger, idempotent when the broker gives
    producer ids: Apache Kafka yes, Tansu no; detected at `start()`).
    """

    def __init__(self, bootstrap_servers: str, **producer_options: Any) -> None:
        self._bootstrap = bootstrap_servers
        self._options = producer_options
        self._started: AIOKafkaProducer | None = None

    @property
    def _producer(self) -> AIOKafkaProducer:
        if self._started is None:
            raise RuntimeError("TemprProducer is not started: use `async with` or `await start()`")
        return self._started

    @property
    def idempotent(self) -> bool:
        """Whether the broker deduplicates this producer's retried batches."""
        return bool(self._producer._txn_manager is not None)

    @classmethod
    def from_settings(cls, settings: Settings | None = None, **producer_options: Any) -> Self:
        """Broker address, SASL and TLS from the `TEMPR_KAFKA_*` settings (see README "Security");
        `producer_options` still override."""
        settings = settings or Settings()
        return cls(settings.bootstrap, **(kafka_client_options(settings) | producer_options))

    async def start(self) -> None:
        self._started = await start_producer(self._bootstrap, **self._options)

    async def stop(self) -> None:
        if self._started is not None:
            await self._started.stop()
            self._started = None

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
        events = list(events)
        metas = await send_messages(self._producer, events)
        return [
            Delivery(e.event_id, e.message_id, m.topic, m.partition, m.offset)
            for e, m in zip(events, metas, strict=True)
        ]

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
