"""A bank's identity: profile, disposition and per-bank configuration (`/v1/banks/...`)."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from tempr.schemas.limits import SafeText

__all__ = [
    "Bank",
    "BankConfig",
    "BankDeletedOut",
    "BankIn",
    "BankPage",
    "BankPatch",
    "Disposition",
    "DispositionPatch",
]


class Disposition(BaseModel):
    """How the bank reasons when it reflects. Traits run 1 (low) to 5 (high)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    skepticism: int = Field(default=3, ge=1, le=5, description="1 takes claims at face value, 5 doubts them.")
    literalism: int = Field(
        default=3, ge=1, le=5, description="1 reads between the lines, 5 reads literally."
    )
    empathy: int = Field(default=3, ge=1, le=5, description="1 sticks to facts, 5 weighs feelings first.")
    bias_strength: float = Field(
        default=0.5,
        ge=0.0,
        le=1.0,
        description="How much the traits shape opinions: 0 neutral and fact-driven, 1 strongly.",
    )


class DispositionPatch(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    skepticism: int | None = Field(default=None, ge=1, le=5)
    literalism: int | None = Field(default=None, ge=1, le=5)
    empathy: int | None = Field(default=None, ge=1, le=5)
    bias_strength: float | None = Field(default=None, ge=0.0, le=1.0)


class BankConfig(BaseModel):
    """Per-bank overrides of server defaults; unset fields follow the server."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    reflect_budget: Literal["low", "mid", "high"] | None = Field(
        default=None, description="Recall depth used by reflect when the request does not say."
    )
    form_opinions: bool | None = Field(
        default=None, description="Whether reflect stores the opinions it forms (default true)."
    )
    reinforce_opinions: bool | None = Field(
        default=None, description="Whether new facts re-evaluate this bank's opinions (default true)."
    )
    observations: bool | None = Field(
        default=None, description="Whether facts are consolidated into observations (default true)."
    )
    graph_retriever: Literal["bfs", "mpfp"] | None = Field(
        default=None, description="Recall's graph arm for this bank when a request does not choose."
    )
    message_retention_days: int | None = Field(
        default=None,
        ge=1,
        le=1_000_000,
        description="Raw messages (journal, chunks) accepted longer ago than this are forgotten and "
        "tombstoned; the facts made from them stay (default: kept forever).",
    )
    fact_retention_days: int | None = Field(
        default=None,
        ge=1,
        le=1_000_000,
        description="Facts stored longer ago than this are forgotten and tombstoned (default: kept forever).",
    )


class BankIn(BaseModel):
    """`PUT`: the whole profile (unset fields take their defaults)."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {
                    "name": "Rita",
                    "background": "I review programming languages for a living.",
                    "disposition": {"skepticism": 5, "literalism": 3, "empathy": 2, "bias_strength": 0.7},
                    "config": {"reflect_budget": "high"},
                }
            ]
        },
    )

    name: SafeText | None = Field(default=None, max_length=256, description="Defaults to the bank id.")
    background: SafeText = Field(default="", max_length=20_000, description="First-person text: who I am.")
    disposition: Disposition = Field(default_factory=Disposition)
    config: BankConfig = Field(default_factory=BankConfig)


class BankPatch(BaseModel):
    """`PATCH`: only what is set changes. A new `background` is merged into the old one."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {"background": "I moved to Lisbon in 2024.", "disposition": {"empathy": 4}},
                {"config": {"observations": False}},
            ]
        },
    )

    name: SafeText | None = Field(default=None, max_length=256)
    background: SafeText | None = Field(
        default=None,
        max_length=20_000,
        description="Merged with the current background (the LLM resolves contradictions in favour "
        "of the new text; without an LLM it is appended).",
    )
    disposition: DispositionPatch | None = None
    config: BankConfig | None = Field(default=None, description="Set fields replace the stored ones.")


class Bank(BaseModel):
    bank_id: str
    name: str
    background: str
    disposition: Disposition
    config: BankConfig
    created_at: datetime
    updated_at: datetime


class BankPage(BaseModel):
    items: list[Bank]
    total: int
    limit: int
    offset: int


class BankDeletedOut(BaseModel):
    bank_id: str
    deleted: dict[str, int] = Field(description="Rows removed per table.")
