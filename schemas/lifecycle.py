"""Memory lifecycle over HTTP: one fact in detail, forgetting, correcting."""

from __future__ import annotations

from datetime import datetime
from typing import Self
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, model_validator

from tempr.schemas.api import ConsistencyToken, Entity, Memory
from tempr.schemas.limits import Content, SafeText, Tags, Timestamp

__all__ = [
    "CorrectionAccepted",
    "FactVersion",
    "ForgetResponse",
    "MemoryDetail",
    "MemoryLinkOut",
    "MemoryPatch",
]


class MemoryLinkOut(BaseModel):
    other_id: UUID
    link_type: str
    weight: float
    direction: str = Field(description="'out' (this fact → other) or 'in'.")


class FactVersion(BaseModel):
    """An earlier version of a corrected fact."""

    text: str
    occurred_start: datetime | None = None
    occurred_end: datetime | None = None
    tags: list[str] = Field(default_factory=list)
    replaced_at: datetime
    reason: str = ""


class MemoryDetail(Memory):
    """One fact with its provenance (source messages, chunk), entities, links and history."""

    chunk_text: str | None = None
    entities: list[Entity] = Field(default_factory=list)
    links: list[MemoryLinkOut] = Field(default_factory=list)
    history: list[FactVersion] = Field(default_factory=list, description="Earlier versions, oldest first.")


class ForgetResponse(BaseModel):
    bank_id: str
    facts_removed: int
    observations_removed: int = 0
    opinions_updated: int = Field(0, description="Opinions that kept their text and lost it as evidence.")
    entities_removed: int = 0
    chunks_removed: int = 0
    messages_removed: int = 0
    messages_forgotten: list[str] = Field(default_factory=list)
    messages_rebuilt: int = Field(
        0, description="Messages that shared a fact or a chunk with the forgotten ones, rebuilt without them."
    )
    consistency: ConsistencyToken


class MemoryPatch(BaseModel):
    """What changes; what is not given stays."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [{"text": "Caroline moved to Porto in May 2023.", "reason": "user said"}]
        },
    )

    text: Content | None = Field(default=None, min_length=1)
    occurred_start: Timestamp | None = None
    occurred_end: Timestamp | None = None
    tags: Tags | None = None
    reason: SafeText = Field(default="", max_length=2000)

    @model_validator(mode="after")
    def _something(self) -> Self:
        if not self.model_fields_set - {"reason"}:
            raise ValueError("give at least one of text, occurred_start, occurred_end, tags")
        for name in ("text", "tags"):  # a date may be cleared with null; these may not
            if name in self.model_fields_set and getattr(self, name) is None:
                raise ValueError(f"{name} may not be null (leave it out to keep it)")
        if self.occurred_start and self.occurred_end and self.occurred_start > self.occurred_end:
            raise ValueError("occurred_start must not be after occurred_end")
        return self

    def changes(self) -> dict[str, object]:
        return {k: getattr(self, k) for k in self.model_fields_set if k != "reason"}


class CorrectionAccepted(BaseModel):
    bank_id: str
    id: UUID
    correction_id: UUID
    consistency: ConsistencyToken = Field(
        description="Recall with `after` waits until the correction is applied."
    )
