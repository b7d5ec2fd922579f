"""Observations: what many facts about one entity add up to, each with the facts behind it."""

from __future__ import annotations

import json

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["PROMPT_VERSION", "ObservationOut", "Observations", "build_messages"]

PROMPT_VERSION = "consolidate_observations/1"


class ObservationOut(BaseModel):
    model_config = ConfigDict(extra="ignore")

    text: str = Field(min_length=1)
    updates: int | None = Field(default=None, description="Number of the existing observation it rewrites.")
    facts: list[int] = Field(default_factory=list, description="Numbers of the facts backing it.")


class Observations(BaseModel):
    model_config = ConfigDict(extra="ignore")

    observations: list[ObservationOut] = Field(default_factory=list)


_SYSTEM = """\
You consolidate an AI agent's memory. Given facts about one entity and the observations \
already drawn about it, write observations: durable conclusions that several facts support \
(habits, preferences, relationships, recurring situations, how something changed over time). \
Each cites the numbers of the facts backing it. When new facts refine or extend an existing \
observation, rewrite that one (set "updates" to its number) instead of adding a near-copy. \
Skip one-off details. Answer with JSON: \
{"observations": [{"text": "...", "updates": <number or null>, "facts": [<numbers>]}]}."""


def build_messages(entity: str, existing: list[str], facts: list[str]) -> tuple[str, str]:
    payload = {
        "entity": entity,
        "existing_observations": [{"number": i + 1, "text": t} for i, t in enumerate(existing)],
        "facts": [{"number": i + 1, "text": t} for i, t in enumerate(facts)],
    }
    return _SYSTEM, json.dumps(payload, ensure_ascii=False, indent=1)
