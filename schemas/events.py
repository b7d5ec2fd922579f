"""Versioned stream events. A new version is a new class; old ones stay decodable.

Every event carries a literal ``event_type`` and ``schema_version``; `decode_event` picks the
class through a discriminated union and raises `InvalidEvent` with the validation error.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal
from uuid import UUID

from pydantic import (
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    model_validator,
)

from tempr.errors import InvalidEvent
from tempr.schemas.ids import BankId
from tempr.schemas.limits import Content, Metadata, SafeText, Tags, Timestamp

__all__ = [
    "BankDeleted",
    "CausalRelation",
    "ChunkEvent",
    "DeadLetter",
    "EndOfConversation",
    "EntityMention",
    "ExtractedFact",
    "FactCorrection",
    "FactType",
    "FactsEvent",
    "GraphEvent",
    "LinkType",
    "MemoryLink",
    "MessageEvent",
    "MessagePart",
    "OpinionUpdate",
    "OpinionVerdict",
    "ResolvedEntity",
    "StreamEvent",
    "UnitEntity",
    "decode_event",
    "encode_event",
]

FactType = Literal["world", "experience", "opinion", "observation"]
LinkType = Literal["temporal", "semantic", "entity", "causes", "caused_by", "enables", "prevents"]
CausalType = Literal["causes", "caused_by", "enables", "prevents"]
OpinionVerdict = Literal["reinforce", "weaken", "contradict"]


class _Event(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=False)


class MessageEvent(_Event):
    """One conversation turn or document item, as accepted (topic tempr.messages.v1).

    Bounded like the API's `RetainItem` (`schemas.limits`), so a record produced straight to
    the topic that the API would have refused is dead-lettered by the segmenter."""

    event_type: Literal["message"] = "message"
    schema_version: Literal[1] = 1
    event_id: UUID
    bank_id: BankId
    message_id: SafeText = Field(min_length=1, max_length=256)
    content: Content = Field(min_length=1)
    speaker: SafeText | None = Field(default=None, max_length=256)
    timestamp: Timestamp | None = None
    conversation_id: SafeText | None = Field(default=None, max_length=256)
    context: SafeText | None = Field(default=None, max_length=2000)
    document_id: SafeText | None = Field(default=None, max_length=256)
    tags: Tags = Field(default_factory=list)
    metadata: Metadata = Field(default_factory=dict)
    received_at: Timestamp


class EndOfConversation(_Event):
    """Flushes the segmenter's buffer for one conversation."""

    event_type: Literal["end_of_conversation"] = "end_of_conversation"
    schema_version: Literal[1] = 1
    bank_id: BankId
    conversation_id: SafeText = Field(max_length=256)


class MessagePart(BaseModel):
    """One part of a journaled message that the segmenter cut in parts (`split_long_item`).

    The message counts as processed only once every part has been materialized: until then
    its journal row stays pending, and a lost part is redelivered with the message."""

    event_id: UUID
    part: int = Field(ge=0)
    parts: int = Field(ge=2)

    @model_validator(mode="after")
    def _part_in_range(self) -> MessagePart:
        if self.part >= self.parts:
            raise ValueError(f"part {self.part} of {self.parts} is out of range")
        return self


class ChunkEvent(_Event):
    """Consecutive turns of one conversation (or one piece of a document) (tempr.chunks.v1).

    `message_parts` names the turns that are one part of a longer message; only the
    segmenter sets it, never a message's own metadata."""

    event_type: Literal["chunk"] = "chunk"
    schema_version: Literal[1] = 1
    chunk_id: UUID
    bank_id: BankId
    conversation_id: str | None = None
    document_id: str | None = None
    messages: list[MessageEvent] = Field(min_length=1)
    message_parts: list[MessagePart] = Field(default_factory=list)


class EntityMention(BaseModel):
    name: str = Field(min_length=1)
    kind: str = "other"  # person, org, location, product, concept, event, other


class CausalRelation(BaseModel):
    """A causal edge from the fact carrying it to another fact of the same chunk."""

    target_index: int = Field(ge=0)
    relation: CausalType
    weight: float = Field(default=1.0, ge=0.0, le=1.0)


class ExtractedFact(BaseModel):
    fact_id: UUID
    text: str = Field(min_length=1)
    fact_type: FactType = "world"
    occurred_start: AwareDatetime | None = None
    occurred_end: AwareDatetime | None = None
    mentioned_at: AwareDatetime | None = None
    confidence: float | None = None
    entities: list[EntityMention] = Field(default_factory=list)
    causal: list[CausalRelation] = Field(default_factory=list)
    source_message_ids: list[str] = Field(default_factory=list)
    context: str | None = None
    document_id: str | None = None
    conversation_id: str | None = None
    tags: list[str] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)
    embedding: list[float] | None = None
    # Opinions and observations: the facts they rest on (an observation's proof count).
    evidence_ids: list[UUID] = Field(default_factory=list)


class _ChunkFacts(_Event):
    """What the facts and graph events of one chunk share. `message_event_ids` are the journal
    rows covered; `message_parts` those of them the chunk holds only one part of."""

    bank_id: BankId
    chunk_id: UUID
    chunk_text: str = ""
    conversation_id: str | None = None
    document_id: str | None = None
    message_event_ids: list[UUID]
    message_parts: list[MessagePart] = Field(default_factory=list)
    facts: list[ExtractedFact] = Field(default_factory=list)
    # Set when the one fact is a correction of a stored fact (`FactCorrection`), not new.
    correction_id: UUID | None = None


class FactsEvent(_ChunkFacts):
    """Facts of one chunk (tempr.facts.v1)."""

    event_type: Literal["facts"] = "facts"
    schema_version: Literal[1] = 1


class ResolvedEntity(BaseModel):
    entity_id: UUID
    canonical_name: str
    kind: str = "other"
    aliases: list[str] = Field(default_factory=list)
    first_seen: datetime | None = None
    last_seen: datetime | None = None


class UnitEntity(BaseModel):
    unit_id: UUID
    entity_id: UUID


class MemoryLink(BaseModel):
    from_id: UUID
    to_id: UUID
    link_type: LinkType
    weight: float = Field(ge=0.0, le=1.0)


class GraphEvent(_ChunkFacts):
    """Everything the materializer writes for one chunk (tempr.graph.v1)."""

    event_type: Literal["graph"] = "graph"
    schema_version: Literal[1] = 1
    entities: list[ResolvedEntity] = Field(default_factory=list)
    unit_entities: list[UnitEntity] = Field(default_factory=list)
    links: list[MemoryLink] = Field(default_factory=list)


class OpinionUpdate(_Event):
    """New evidence moved an opinion (tempr.graph.v1, keyed by bank).

    Reinforce and weaken carry a confidence *delta*, so updates computed concurrently from the
    same stored state still add up; contradict carries the revised text and confidence.
    `update_id` derives from the opinion and the evidence: a redelivery applies once.
    """

    event_type: Literal["opinion_update"] = "opinion_update"
    schema_version: Literal[1] = 1
    update_id: UUID
    bank_id: BankId
    opinion_id: UUID
    verdict: OpinionVerdict
    confidence_delta: float = Field(default=0.0, ge=-1.0, le=1.0)
    revised_text: str | None = None
    revised_confidence: float | None = Field(default=None, ge=0.0, le=1.0)
    revised_embedding: list[float] | None = None
    evidence_ids: list[UUID] = Field(default_factory=list)
    evidence_message_ids: list[str] = Field(default_factory=list)
    reasoning: str = ""


class FactCorrection(_Event):
    """A stored fact was corrected (tempr.chunks.v1, keyed like the fact's conversation).

    Only a pointer: the new version is the API's row in `fact_corrections`, which the
    extractor reads, so nobody who can merely produce to the topic can rewrite a fact."""

    event_type: Literal["fact_correction"] = "fact_correction"
    schema_version: Literal[1] = 1
    bank_id: BankId
    correction_id: UUID
    unit_id: UUID


class BankDeleted(_Event):
    """Tombstone: a replay of the log must not bring a deleted bank back."""

    event_type: Literal["bank_deleted"] = "bank_deleted"
    schema_version: Literal[1] = 1
    bank_id: BankId
    deleted_at: AwareDatetime
    # HMAC by tempr's API (streams/control.py); the segmenter refuses a tombstone without it.
    signature: str | None = None


class DeadLetter(_Event):
    """A record that failed, with the reason and the original payload (tempr.dlq.v1)."""

    event_type: Literal["dead_letter"] = "dead_letter"
    schema_version: Literal[1] = 1
    stage: str
    topic: str
    partition: int | None = None
    offset: int | None = None
    key: str | None = None
    payload: str
    error: str
    failed_at: AwareDatetime
    # The journal rows the failed record covers: recording the letter parks them.
    message_event_ids: list[UUID] = Field(default_factory=list)


StreamEvent = Annotated[
    MessageEvent
    | EndOfConversation
    | ChunkEvent
    | FactsEvent
    | GraphEvent
    | OpinionUpdate
    | FactCorrection
    | BankDeleted
    | DeadLetter,
    Field(discriminator="event_type"),
]
# mypy reads the Annotated union as a bare UnionType, not a type form (in some of its runs:
# hence unused-ignore too); pydantic takes it.
_adapter: TypeAdapter[Any] = TypeAdapter(StreamEvent)  # type: ignore[arg-type, unused-ignore]


def decode_event(raw: bytes | str) -> Any:
    """Parse and validate one record; raises `InvalidEvent` with a readable reason."""
    try:
        return _adapter.validate_json(raw)
    except ValidationError as exc:
        raise InvalidEvent(_summarize(exc)) from exc


def encode_event(event: BaseModel) -> bytes:
    return event.model_dump_json(exclude_none=False).encode()


def _summarize(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:5]:
        loc = ".".join(str(p) for p in err.get("loc", ())) or "record"
        parts.append(f"{loc}: {err.get('msg')}")
    return "; ".join(parts)
