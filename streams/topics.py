"""The one topic catalog: names, partition counts and how each record is keyed."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = [
    "ALL_TOPICS",
    "CHUNKS",
    "DLQ",
    "FACTS",
    "GRAPH",
    "MESSAGES",
    "WORKER_GROUP",
    "TopicSpec",
    "bank_key",
    "conversation_key",
    "event_headers",
    "message_key",
]


@dataclass(frozen=True)
class TopicSpec:
    name: str
    key: Literal["bank/conversation", "bank", "none"]
    # None means "the configured default" (settings.topic_partitions).
    partitions: int | None = None


# Keyed by conversation so that turns of one conversation stay ordered while different
# conversations of one bank are segmented and extracted in parallel.
MESSAGES = TopicSpec("tempr.messages.v1", key="bank/conversation")
CHUNKS = TopicSpec("tempr.chunks.v1", key="bank/conversation")
# Keyed by bank: resolution and linking of one bank are serialized by its partition,
# which is what keeps concurrent retains from creating duplicate entities.
FACTS = TopicSpec("tempr.facts.v1", key="bank")
GRAPH = TopicSpec("tempr.graph.v1", key="bank")
DLQ = TopicSpec("tempr.dlq.v1", key="none", partitions=1)

ALL_TOPICS = (MESSAGES, CHUNKS, FACTS, GRAPH, DLQ)

# The workers' consumer group: Faust uses its app id (`streams.app.APP_ID`) as the group id.
WORKER_GROUP = "tempr"


def conversation_key(bank_id: str, conversation_id: str | None) -> bytes:
    return f"{bank_id}/{conversation_id or ''}".encode()


def bank_key(bank_id: str) -> bytes:
    return bank_id.encode()


def message_key(bank_id: str, conversation_id: str | None, document_id: str | None) -> bytes:
    """A message outside a conversation is ordered with the other parts of its document."""
    return conversation_key(bank_id, conversation_id or document_id)


def event_headers(event_type: str, schema_version: int) -> list[tuple[str, bytes]]:
    """Lets consumers route or skip a record without decoding its JSON value."""
    return [
        ("event_type", event_type.encode()),
        ("schema_version", str(schema_version).encode()),
        ("content-type", b"application/json"),
    ]
