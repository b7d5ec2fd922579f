"""Reflect (`POST /v1/banks/{bank_id}/reflect`) and the opinions it forms."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field

from tempr.schemas.limits import JsonSchema, Query, SafeText, Timestamp
from tempr.schemas.recall import FactType

__all__ = [
    "BasedOn",
    "LLMUsage",
    "Opinion",
    "OpinionChange",
    "OpinionFormed",
    "OpinionPage",
    "ReflectRequest",
    "ReflectResponse",
]


class ReflectRequest(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        allow_inf_nan=False,
        json_schema_extra={
            "examples": [
                {"query": "What do you think of Python for data science?", "budget": "mid"},
                {
                    "query": "Should Caroline apply to the counselling programme?",
                    "context": "She asked for advice this morning.",
                    "response_schema": {
                        "type": "object",
                        "properties": {"advice": {"enum": ["apply", "wait"]}, "why": {"type": "string"}},
                        "required": ["advice"],
                    },
                },
            ]
        },
    )

    query: Query = Field(min_length=1, description="What to think about or answer.")
    budget: Literal["low", "mid", "high"] | None = Field(
        default=None, description="Recall depth; default: the bank's `reflect_budget`, else mid."
    )
    max_tokens: int = Field(default=4096, ge=1, le=100_000, description="Token budget of recalled facts.")
    context: SafeText | None = Field(
        default=None, max_length=20_000, description="Extra context for this question (not stored)."
    )
    response_schema: JsonSchema | None = Field(
        default=None,
        description="A JSON schema: the answer is returned in `structured`, validated against it.",
    )
    query_timestamp: Timestamp | None = Field(default=None, description="'Now' for the recall.")
    after: str | None = Field(
        default=None,
        max_length=32,
        description="Consistency token (`j<seq>`) from a retain: reflect on memory that includes it.",
    )
    form_opinions: bool | None = Field(
        default=None, description="Store the opinions this answer forms; default: the bank's config (true)."
    )


class BasedOn(BaseModel):
    id: UUID
    fact_type: FactType
    text: str


class OpinionFormed(BaseModel):
    id: UUID
    text: str
    confidence: float = Field(ge=0.0, le=1.0)
    entities: list[str]
    based_on: list[UUID]


class LLMUsage(BaseModel):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0


class ReflectResponse(BaseModel):
    bank_id: str
    query: str
    text: str = Field(description="The answer, in the bank's voice (JSON text when a schema was given).")
    structured: Any | None = Field(
        default=None, description="The answer validated against `response_schema`."
    )
    based_on: list[BasedOn] = Field(description="The recalled facts the answer cites.")
    opinions_formed: list[OpinionFormed] = Field(
        description="Opinions published to the log; they appear in recall once materialized."
    )
    usage: LLMUsage


class OpinionChange(BaseModel):
    id: UUID
    verdict: Literal["reinforce", "weaken", "contradict"]
    previous_text: str
    previous_confidence: float | None
    new_text: str
    new_confidence: float | None
    evidence_ids: list[UUID]
    reasoning: str
    created_at: datetime


class Opinion(BaseModel):
    id: UUID
    bank_id: str
    text: str
    confidence: float | None
    entities: list[str]
    evidence_ids: list[UUID]
    created_at: datetime
    updated_at: datetime
    history: list[OpinionChange] | None = Field(
        default=None, description="Oldest first; present on `GET .../opinions/{id}`."
    )


class OpinionPage(BaseModel):
    bank_id: str
    items: list[Opinion]
    total: int
    limit: int
    offset: int
