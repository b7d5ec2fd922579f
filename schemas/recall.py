"""Request and response models of recall (`POST /v1/banks/{bank_id}/recall`)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, model_validator

from tempr.schemas.limits import Query, SafeText, Timestamp

__all__ = [
    "FactType",
    "RecallBudget",
    "RecallChunk",
    "RecallInclude",
    "RecallRequest",
    "RecallResponse",
    "RecallResult",
    "RecallScores",
    "TagsMatch",
    "TimeWindow",
]

FactType = Literal["world", "experience", "opinion", "observation"]
TagsMatch = Literal["any", "all", "any_strict", "all_strict", "exact"]


class TimeWindow(BaseModel):
    """A period; either end may be open."""

    model_config = ConfigDict(extra="forbid")

    start: Timestamp | None = None
    end: Timestamp | None = None

    @model_validator(mode="after")
    def _ordered(self) -> TimeWindow:
        if self.start and self.end and self.start > self.end:
            raise ValueError("time_window.start must not be after time_window.end")
        return self


class RecallInclude(BaseModel):
    model_config = ConfigDict(extra="forbid")

    chunks: bool = False
    max_chunk_tokens: int = Field(default=8192, ge=1, le=1_000_000)
    entities: bool = False


class RecallRequest(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        allow_inf_nan=False,
        json_schema_extra={
            "examples": [
                {"query": "When did Caroline go to the support group?", "budget": "mid", "max_tokens": 4096},
                {
                    "query": "What did Melanie do last spring?",
                    "query_timestamp": "2023-10-01T00:00:00Z",
                    "types": ["world", "experience"],
                    "tags": ["family"],
                    "tags_match": "any",
                    "include": {"entities": True},
                    "trace": True,
                    "after": "j42",
                },
            ]
        },
    )

    query: Query = Field(min_length=1, description="At most TEMPR_MAX_QUERY_CHARS characters.")
    budget: Literal["low", "mid", "high"] = Field(
        default="mid", description="Search depth: low/mid/high = 100/300/1000 candidates per arm."
    )
    max_tokens: int = Field(default=4096, ge=1, le=100_000, description="Token budget of fact texts.")
    types: list[FactType] | None = Field(default=None, description="Fact types to search; null = all.")
    tags: list[SafeText] | None = Field(default=None, max_length=64)
    tags_match: TagsMatch = Field(
        default="any",
        description="any/all: untagged facts pass too; *_strict: untagged excluded; exact: same tag set.",
    )
    query_timestamp: Timestamp | None = Field(
        default=None, description="'Now' for relative time expressions and recency; default: server time."
    )
    time_window: TimeWindow | None = Field(default=None, description="Hard filter on when facts happened.")
    include: RecallInclude = Field(default_factory=RecallInclude)
    trace: bool = False
    after: str | None = Field(
        default=None, max_length=32, description="Consistency token (`j<seq>`) from a retain."
    )
    preset: SafeText = Field(default="default", max_length=64, description="Named RecallConfig preset.")
    graph_retriever: Literal["bfs", "mpfp"] | None = Field(
        default=None,
        description="Graph arm: bfs (spreading activation) or mpfp (meta-path forward push); "
        "default: the bank's config, else the preset's.",
    )


class RecallScores(BaseModel):
    rrf: float
    rerank: float
    final: float
    arms: dict[str, int] = Field(description="1-indexed rank of the fact in each arm that found it.")


class RecallChunk(BaseModel):
    id: UUID
    text: str


class RecallResult(BaseModel):
    id: UUID
    text: str = Field(
        description="The fact as packed: a sentence a better-ranked result already shows is left out "
        "(two exchanges of one turn both quote it); GET /v1/banks/{bank_id}/memories/{id} gives the whole fact."
    )
    fact_type: str
    occurred_start: datetime | None
    occurred_end: datetime | None
    mentioned_at: datetime | None
    confidence: float | None = Field(default=None, description="Opinions: how firmly held (0-1).")
    proof_count: int = Field(default=1, description="Observations: how many facts back it.")
    tags: list[str]
    source_message_ids: list[str]
    chunk_id: UUID | None
    # Present only when asked for (`include.entities` / `include.chunks`).
    entities: list[str] | None = None
    chunk: RecallChunk | None = None
    scores: RecallScores


class RecallBudget(BaseModel):
    name: str
    limit: int


class RecallResponse(BaseModel):
    bank_id: str
    query: str
    results: list[RecallResult]
    tokens_used: int
    budget: RecallBudget
    temporal_window: TimeWindow | None
    trace: dict[str, Any] | None
