"""Entity disambiguation: is this mention the same entity as that known one?

Asked only for borderline matches (a fuzzy or nickname match the rules accept without
confidence); the paper's resolver weighs name similarity, shared context and recency, so the
prompt carries the fact the mention appears in and what is known about the candidate.
"""

from __future__ import annotations

import json

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["PROMPT_VERSION", "SameEntityDecision", "SameEntityInput", "build_messages"]

PROMPT_VERSION = "resolve_entity/1"


class SameEntityInput(BaseModel):
    mention: str
    mention_kind: str
    mention_context: str = Field(description="the fact the mention appears in")
    candidate: str
    candidate_kind: str
    candidate_aliases: list[str] = Field(default_factory=list)
    candidate_mentions: int = 0


class SameEntityDecision(BaseModel):
    model_config = ConfigDict(extra="ignore")

    same: bool
    reason: str = ""


_SYSTEM = """\
You keep the entity index of an AI agent's long-term memory. A new mention looks similar to an \
entity already known, but not certainly the same one (a nickname, a typo, a near-identical \
name). Decide whether they refer to the same real-world person, organization, place or thing. \
Say no when the names could belong to different entities and the context does not settle it. \
Answer with JSON: {"same": true|false, "reason": "<one short sentence>"}."""


def build_messages(data: SameEntityInput) -> tuple[str, str]:
    return _SYSTEM, "Decide for this pair.\n\n" + json.dumps(data.model_dump(), ensure_ascii=False, indent=1)
