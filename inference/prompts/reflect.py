"""Reflect: answer in the bank's voice from recalled memories, and say what opinions formed.

Memories are numbered in the prompt; the model cites numbers (cheap to produce, and checked
against what was shown) and the caller maps them back to fact ids.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from tempr.inference.prompts.disposition import identity_block
from tempr.schemas.banks import Disposition

__all__ = [
    "PROMPT_VERSION",
    "PromptFact",
    "ReflectOpinionOut",
    "ReflectOutput",
    "build_messages",
    "output_schema",
]

PROMPT_VERSION = "reflect/1"


@dataclass(frozen=True)
class PromptFact:
    number: int
    fact_type: str
    text: str
    when: datetime | None
    confidence: float | None
    proof_count: int


class ReflectOpinionOut(BaseModel):
    model_config = ConfigDict(extra="ignore")

    text: str = Field(min_length=1, description="The opinion in first person, with its reason.")
    confidence: float = Field(ge=0.0, le=1.0)
    entities: list[str] = Field(default_factory=list, description="Who or what the opinion is about.")
    based_on: list[int] = Field(default_factory=list, description="Numbers of the memories it rests on.")


class ReflectOutput(BaseModel):
    model_config = ConfigDict(extra="ignore")

    answer: Any
    based_on: list[int] = Field(default_factory=list)
    opinions: list[ReflectOpinionOut] = Field(default_factory=list)


def output_schema(response_schema: dict[str, Any] | None) -> dict[str, Any]:
    """The envelope's schema; `answer` follows the caller's schema, or is plain text."""
    schema = ReflectOutput.model_json_schema()
    schema["properties"]["answer"] = copy.deepcopy(response_schema) if response_schema else {"type": "string"}
    schema["required"] = ["answer", "based_on", "opinions"]
    return schema


_SECTIONS = (
    ("experience", "MY IDENTITY AND EXPERIENCES"),
    ("world", "WHAT I KNOW ABOUT THE WORLD"),
    ("observation", "WHAT I HAVE CONCLUDED FROM MANY FACTS"),
    ("opinion", "MY CURRENT OPINIONS"),
)

_SYSTEM = """\
You are {name}, an AI agent with a long-term memory. You answer as yourself, in the first \
person, from the numbered memories you are given and from who you are. Do not invent facts \
that the memories do not support; say so when they are not enough.

{identity}

Reply with one JSON object:
- "answer": your answer{answer_shape}.
- "based_on": the numbers of the memories your answer relies on.
- "opinions": the views you hold after thinking about this question, if it calls for a \
judgment (none for a purely factual question). Each has "text" (first person, with the reason), \
"confidence" from 0 to 1 (0.9+ a deeply held conviction, 0.5 a tentative view, below 0.3 barely \
committed), "entities" (who or what it is about) and "based_on" (memory numbers). Restate an \
existing opinion only if your view changed."""


def build_messages(
    *,
    name: str,
    background: str,
    disposition: Disposition,
    facts: list[PromptFact],
    query: str,
    context: str | None,
    structured: bool,
) -> tuple[str, str]:
    system = _SYSTEM.format(
        name=name,
        identity=identity_block(name, background, disposition),
        answer_shape=" (a JSON value following the answer schema)" if structured else " (plain text)",
    )
    parts: list[str] = []
    for fact_type, title in _SECTIONS:
        rows = [f for f in facts if f.fact_type == fact_type]
        if not rows:
            continue
        parts.append(f"{title}:")
        parts += [_line(f) for f in rows]
        parts.append("")
    if not facts:
        parts += ["(I remember nothing relevant.)", ""]
    if context:
        parts += ["CONTEXT FOR THIS QUESTION:", context.strip(), ""]
    parts.append(f"QUESTION: {query}")
    return system, "\n".join(parts)


def _line(fact: PromptFact) -> str:
    extras = []
    if fact.when is not None:
        extras.append(fact.when.strftime("%Y-%m-%d"))
    if fact.fact_type == "opinion" and fact.confidence is not None:
        extras.append(f"confidence {fact.confidence:.2f}")
    if fact.fact_type == "observation":
        extras.append(f"backed by {fact.proof_count} facts")
    suffix = f" ({', '.join(extras)})" if extras else ""
    return f"[{fact.number}] {json.dumps(fact.text, ensure_ascii=False)[1:-1]}{suffix}"
