"""Request and response models of the HTTP API (`/v1/...`)."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, field_validator

from tempr.limits import limits
from tempr.schemas.limits import Content, Metadata, SafeText, Tags, Timestamp

__all__ = [
    "ConsistencyToken",
    "DeadLetterOut",
    "ErrorBody",
    "Health",
    "Memory",
    "MemoryPage",
    "RetainItem",
    "RetainRequest",
    "RetainResponse",
    "StageHealth",
]


class RetainItem(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    content: Content = Field(
        min_length=1, description="The text to remember (at most TEMPR_MAX_CONTENT_BYTES as UTF-8)."
    )
    speaker: SafeText | None = Field(default=None, max_length=256)
    timestamp: Timestamp | None = Field(
        default=None,
        description="When it was said (ISO 8601 with a timezone, between TEMPR_MIN_TIMESTAMP and "
        "TEMPR_MAX_TIMESTAMP).",
    )
    conversation_id: SafeText | None = Field(default=None, max_length=256)
    message_id: SafeText | None = Field(
        default=None,
        max_length=256,
        description="The source's id for this message (e.g. a chat message id). Sending the same "
        "id twice stores it once; without it, an id is derived from the content.",
    )
    context: SafeText | None = Field(default=None, max_length=2000)
    document_id: SafeText | None = Field(default=None, max_length=256)
    tags: Tags = Field(default_factory=list, description="At most TEMPR_MAX_TAGS, each TEMPR_MAX_TAG_CHARS.")
    metadata: Metadata = Field(
        default_factory=dict,
        description="Kept with the message (not copied into its facts); at most "
        "TEMPR_MAX_METADATA_BYTES as JSON, nested at most TEMPR_MAX_METADATA_DEPTH.",
    )

    @field_validator("content")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("content must not be blank")
        return value


class RetainRequest(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {
                    "items": [
                        {
                            "content": "I went to a LGBTQ support group yesterday.",
                            "speaker": "Caroline",
                            "timestamp": "2023-05-08T13:56:00Z",
                            "conversation_id": "locomo-26/session_1",
                            "message_id": "D1:3",
                        },
                        {"content": "Caroline prefers tea to coffee.", "tags": ["preferences"]},
                    ]
                }
            ]
        },
    )

    items: list[RetainItem] = Field(min_length=1, description="At most TEMPR_MAX_ITEMS.")

    @field_validator("items")
    @classmethod
    def _not_too_many(cls, value: list[RetainItem]) -> list[RetainItem]:
        if len(value) > limits().max_items:
            raise ValueError(f"has {len(value)} items, more than TEMPR_MAX_ITEMS ({limits().max_items})")
        return value


class ConsistencyToken(BaseModel):
    """Where a retain landed. `token` is what recall's `after` accepts."""

    token: str
    journal_seq: int
    topic: str
    partitions: dict[int, int] = Field(
        default_factory=dict, description="Highest offset written per partition."
    )

    @staticmethod
    def encode(journal_seq: int, correction_seq: int | None = None) -> str:
        """`j<seq>`; a correction adds `c<seq>`: wait for it to be applied too."""
        return f"j{journal_seq}" if correction_seq is None else f"j{journal_seq}c{correction_seq}"

    @staticmethod
    def decode(token: str) -> int:
        return ConsistencyToken.decode_parts(token)[0]

    @staticmethod
    def decode_parts(token: str) -> tuple[int, int | None]:
        # At most 18 digits: a journal sequence number is a bigint.
        found = re.fullmatch(r"j([0-9]{1,18})(?:c([0-9]{1,18}))?", token)
        if found is None:
            raise ValueError(f"not a consistency token: {token!r}")
        return int(found[1]), None if found[2] is None else int(found[2])


class RetainResponse(BaseModel):
    bank_id: str
    accepted: int
    event_ids: list[UUID]
    unchanged_documents: list[str] = Field(
        default_factory=list,
        description="Documents whose content hash matched the stored version: nothing redone.",
    )
    consistency: ConsistencyToken


class Memory(BaseModel):
    id: UUID
    text: str
    fact_type: str
    occurred_start: datetime | None = None
    occurred_end: datetime | None = None
    mentioned_at: datetime | None = None
    confidence: float | None = None
    proof_count: int = 1
    tags: list[str] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)
    context: str | None = None
    conversation_id: str | None = None
    document_id: str | None = None
    chunk_id: UUID | None = None
    source_message_ids: list[str] = Field(default_factory=list)
    evidence_ids: list[UUID] = Field(
        default_factory=list, description="Opinions and observations: the facts they rest on."
    )
    created_at: datetime


class MemoryPage(BaseModel):
    bank_id: str
    total: int
    limit: int
    offset: int
    items: list[Memory]


class StageHealth(BaseModel):
    """One stream stage as its heartbeats tell it."""

    heartbeat_age_s: float
    busy_s: float | None = None  # on its current batch for this long; None when idle
    processed: int = 0
    failed: int = 0


class Health(BaseModel):
    status: str
    database: str
    broker: str
    pending_events: int | None = None
    oldest_pending_age_s: float | None = None
    stages: dict[str, StageHealth] = Field(default_factory=dict)
    restarts: dict[str, int] = Field(
        default_factory=dict, description="Restarts of each child by `tempr up` (worker, api, postgres)."
    )
    problems: list[str] = Field(default_factory=list, description="Why the status is not ok.")
    details: dict[str, Any] = Field(default_factory=dict)


class DeadLetterOut(BaseModel):
    id: UUID
    stage: str
    topic: str
    partition: int | None
    offset: int | None
    key: str | None
    payload: str
    error: str
    failed_at: datetime
    replayed_at: datetime | None = None


class ErrorBody(BaseModel):
    detail: str


class Entity(BaseModel):
    id: UUID
    canonical_name: str
    kind: str
    aliases: list[str] = Field(default_factory=list)
    mention_count: int = 0
    first_seen: datetime | None = None
    last_seen: datetime | None = None


class EntityPage(BaseModel):
    bank_id: str
    total: int
    limit: int
    offset: int
    items: list[Entity]


class EntityFact(BaseModel):
    id: UUID
    text: str
    fact_type: str
    occurred_start: datetime | None = None
    mentioned_at: datetime | None = None
    source_message_ids: list[str] = Field(default_factory=list)


class EntityDetail(Entity):
    facts: list[EntityFact] = Field(default_factory=list)


class Document(BaseModel):
    id: str
    content_hash: str
    metadata: dict[str, Any] = Field(default_factory=dict)
    facts: int = 0
    created_at: datetime
    updated_at: datetime


class DocumentPage(BaseModel):
    bank_id: str
    total: int
    limit: int
    offset: int
    items: list[Document]


class DocumentDeleted(BaseModel):
    bank_id: str
    document_id: str
    facts_removed: int


class BankStats(BaseModel):
    bank_id: str
    facts: int
    facts_by_type: dict[str, int]
    entities: int
    links_by_type: dict[str, int]
    documents: int
    messages: int
    pending_events: int
    last_update: datetime | None = None
