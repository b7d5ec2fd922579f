"""The bank export format: JSON lines, one record each, self-describing and versioned.

The first line is an `ExportHeader` (format, version, the embedding model and dimension the
vectors were made with); then the bank's rows, parents before children, so an importer can
write each as it arrives; the last line is `ExportEnd` with the counts, so a cut stream is
told apart from a complete one. A new version of the format is a new `FORMAT_VERSION` with an
upgrade of the older records in `upgrade_record`; what cannot be upgraded is refused there.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from tempr.schemas.reflect import OpinionChange

__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "BankRecord",
    "ChunkRecord",
    "CorrectionRecord",
    "DocumentRecord",
    "EntityRecord",
    "ExportEnd",
    "ExportHeader",
    "ExportRecord",
    "FactHistoryRecord",
    "FactRecord",
    "ForgottenFactRecord",
    "ForgottenMessageRecord",
    "ImportResult",
    "LinkRecord",
    "MessageRecord",
    "OpinionHistoryRecord",
    "UnitEntityRecord",
    "parse_record",
    "upgrade_record",
]

FORMAT = "tempr.bank-export"
FORMAT_VERSION = 1


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ExportHeader(_Record):
    record: Literal["header"] = "header"
    format: Literal["tempr.bank-export"] = "tempr.bank-export"
    version: int
    bank_id: str
    exported_at: datetime
    tempr_version: str
    embedding_model: str
    embedding_dimension: int | None


class BankRecord(_Record):
    record: Literal["bank"] = "bank"
    name: str | None
    background: str
    disposition: dict[str, Any]
    config: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    # The banks this one was imported from under another id, oldest first (store/banks.py).
    id_lineage: list[str] = Field(default_factory=list)


class ForgottenMessageRecord(_Record):
    record: Literal["forgotten_message"] = "forgotten_message"
    message_id: str
    conversation_id: str | None
    forgotten_at: datetime
    reason: str


class ForgottenFactRecord(_Record):
    record: Literal["forgotten_fact"] = "forgotten_fact"
    unit_id: UUID
    forgotten_at: datetime
    reason: str


class MessageRecord(_Record):
    """A journaled message; `payload` is the `MessageEvent` as accepted."""

    record: Literal["message"] = "message"
    id: UUID
    message_id: str
    conversation_id: str | None
    document_id: str | None
    payload: dict[str, Any]
    received_at: datetime
    processed_at: datetime | None


class DocumentRecord(_Record):
    record: Literal["document"] = "document"
    id: str
    content_hash: str
    metadata: dict[str, Any]
    created_at: datetime
    updated_at: datetime


class ChunkRecord(_Record):
    record: Literal["chunk"] = "chunk"
    id: UUID
    conversation_id: str | None
    document_id: str | None
    text: str
    message_ids: list[str]
    created_at: datetime


class EntityRecord(_Record):
    record: Literal["entity"] = "entity"
    id: UUID
    canonical_name: str
    kind: str
    aliases: list[str]
    mention_count: int
    first_seen: datetime | None
    last_seen: datetime | None


class FactRecord(_Record):
    """A memory unit of any type (world, experience, opinion, observation) with its vector."""

    record: Literal["fact"] = "fact"
    id: UUID
    text: str
    embedding: list[float] | None
    fact_type: str
    occurred_start: datetime | None
    occurred_end: datetime | None
    mentioned_at: datetime | None
    confidence: float | None
    tags: list[str]
    metadata: dict[str, Any]
    context: str | None
    conversation_id: str | None
    document_id: str | None
    chunk_id: UUID | None
    source_message_ids: list[str]
    evidence_ids: list[UUID]
    created_at: datetime
    updated_at: datetime


class UnitEntityRecord(_Record):
    record: Literal["unit_entity"] = "unit_entity"
    unit_id: UUID
    entity_id: UUID


class LinkRecord(_Record):
    record: Literal["link"] = "link"
    from_id: UUID
    to_id: UUID
    link_type: str
    weight: float


class OpinionHistoryRecord(OpinionChange, _Record):
    """One change of an opinion, as `GET /opinions/{id}` shows it, with the opinion it belongs to."""

    record: Literal["opinion_history"] = "opinion_history"
    opinion_id: UUID


class CorrectionRecord(_Record):
    record: Literal["correction"] = "correction"
    id: UUID
    unit_id: UUID
    text: str
    occurred_start: datetime | None
    occurred_end: datetime | None
    tags: list[str]
    reason: str
    created_at: datetime
    applied_at: datetime | None


class FactHistoryRecord(_Record):
    record: Literal["fact_history"] = "fact_history"
    id: UUID
    unit_id: UUID
    text: str
    occurred_start: datetime | None
    occurred_end: datetime | None
    tags: list[str]
    replaced_at: datetime
    reason: str


class ExportEnd(_Record):
    record: Literal["end"] = "end"
    counts: dict[str, int]


ExportRecord = Annotated[
    ExportHeader
    | BankRecord
    | ForgottenMessageRecord
    | ForgottenFactRecord
    | MessageRecord
    | DocumentRecord
    | ChunkRecord
    | EntityRecord
    | FactRecord
    | UnitEntityRecord
    | LinkRecord
    | OpinionHistoryRecord
    | CorrectionRecord
    | FactHistoryRecord
    | ExportEnd,
    Field(discriminator="record"),
]
_adapter: TypeAdapter[Any] = TypeAdapter(ExportRecord)  # type: ignore[arg-type, unused-ignore]


def parse_record(raw: dict[str, Any]) -> Any:
    """One record as its model; raises pydantic's ValidationError."""
    return _adapter.validate_python(raw)


def upgrade_record(version: int, raw: dict[str, Any]) -> dict[str, Any]:
    """A record of an older format version in the current shape, or ValueError saying why not.

    Version 1 is the first; a record of a newer version than this tempr knows is refused
    (export with this version's tempr, or upgrade the importing one)."""
    if version == FORMAT_VERSION:
        return raw
    if version > FORMAT_VERSION:
        raise ValueError(
            f"export format version {version} is newer than this tempr reads ({FORMAT_VERSION}); "
            "upgrade tempr to import it"
        )
    raise ValueError(f"export format version {version} is not one tempr ever wrote (1 to {FORMAT_VERSION})")


class ImportResult(BaseModel):
    bank_id: str
    source_bank_id: str
    format_version: int
    records: dict[str, int] = Field(description="Records read, by kind.")
    written: dict[str, int] = Field(description="Rows written anew, by kind (0 for what was there already).")
    complete: bool = Field(description="Whether the stream ended with its end record.")
