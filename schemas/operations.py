"""Request and response models of the operations API: replaying a bank, replaying dead letters."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field

from tempr.schemas.api import ConsistencyToken
from tempr.schemas.limits import Timestamp

__all__ = ["BankReplayRequest", "BankReplayResponse", "DeadLetterReplayed"]


class DeadLetterReplayed(BaseModel):
    id: UUID
    topic: str = Field(description="The topic the original record was published to again.")
    partition: int
    offset: int
    replayed_at: datetime
    previously_replayed_at: datetime | None = Field(
        default=None, description="Set when `force` replayed a letter that had been replayed before."
    )


class BankReplayRequest(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        populate_by_name=True,
        json_schema_extra={"examples": [{}, {"from": "2026-11-01T00:00:00Z"}]},
    )

    from_: Timestamp | None = Field(
        default=None,
        alias="from",
        description="Only messages accepted (journaled) at or after this time, plus every message "
        "that shares a fact with them; without it, every message of the bank.",
    )


class BankReplayResponse(BaseModel):
    bank_id: str
    messages_replayed: int
    facts_removed: int = Field(description="World and experience facts deleted to be rebuilt.")
    observations_removed: int
    entities_removed: int = Field(description="Entities no remaining fact mentions.")
    chunks_removed: int
    consistency: ConsistencyToken
