"""Fact extraction: the turns of one chunk → a few narrative, self-contained facts.

Facts follow the paper's extraction principles (section 2.2): coarse narrative facts rather than
fragments, pronouns resolved, relative dates made absolute, temporal ranges, participants and
reasons kept, entities typed, causal links between facts of the same chunk, and provenance.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from tempr.schemas.events import ChunkEvent, MessageEvent

__all__ = [
    "ENTITY_KINDS",
    "PROMPT_VERSION",
    "CausalItem",
    "EntityItem",
    "ExtractionInput",
    "ExtractionResponse",
    "FactItem",
    "Turn",
    "build_messages",
]

PROMPT_VERSION = "extract_facts/1"

ENTITY_KINDS = ("person", "org", "location", "product", "concept", "event", "other")
_KIND_ALIASES = {
    "organization": "org",
    "organisation": "org",
    "company": "org",
    "place": "location",
    "loc": "location",
    "gpe": "location",
    "people": "person",
    "per": "person",
}


# -- input -----------------------------------------------------------------------------------


class Turn(BaseModel):
    message_id: str
    speaker: str | None = None
    timestamp: str | None = Field(default=None, description="ISO 8601 time of the turn")
    content: str

    @classmethod
    def from_message(cls, message: MessageEvent) -> Turn:
        timestamp = message.timestamp.isoformat() if message.timestamp else None
        return cls(
            message_id=message.message_id,
            speaker=message.speaker,
            timestamp=timestamp,
            content=message.content,
        )


class ExtractionInput(BaseModel):
    conversation_id: str | None = None
    document_id: str | None = None
    context: str | None = None
    turns: list[Turn] = Field(min_length=1)

    @classmethod
    def from_chunk(cls, chunk: ChunkEvent) -> ExtractionInput:
        contexts = [m.context for m in chunk.messages if m.context]
        return cls(
            conversation_id=chunk.conversation_id,
            document_id=chunk.document_id,
            context=contexts[0] if contexts else None,
            turns=[Turn.from_message(m) for m in chunk.messages],
        )


# -- response --------------------------------------------------------------------------------


class _Lenient(BaseModel):
    model_config = ConfigDict(extra="ignore", str_strip_whitespace=True)


class EntityItem(_Lenient):
    name: str = Field(min_length=1)
    kind: str = Field(default="other", description="one of: " + ", ".join(ENTITY_KINDS))

    @field_validator("kind", mode="before")
    @classmethod
    def _normalize_kind(cls, value: Any) -> str:
        # A model's "ORGANIZATION" is our "org"; an unknown kind is not worth a retry.
        kind = str(value or "other").strip().lower()
        kind = _KIND_ALIASES.get(kind, kind)
        return kind if kind in ENTITY_KINDS else "other"


class CausalItem(_Lenient):
    target_index: int = Field(description="0-based index of the other fact in `facts`")
    relation: Literal["causes", "caused_by", "enables", "prevents"]

    @field_validator("relation", mode="before")
    @classmethod
    def _normalize_relation(cls, value: Any) -> Any:
        if not isinstance(value, str):
            return value
        return value.strip().lower().replace(" ", "_").replace("-", "_")


class FactItem(_Lenient):
    text: str = Field(min_length=1)
    fact_type: Literal["world", "experience"] = "world"
    occurred_start: str | None = Field(default=None, description="ISO date, or null")
    occurred_end: str | None = Field(default=None, description="ISO date, or null")
    entities: list[EntityItem] = Field(default_factory=list)
    source_message_ids: list[str] = Field(default_factory=list)
    causal: list[CausalItem] = Field(default_factory=list)

    @field_validator("fact_type", mode="before")
    @classmethod
    def _normalize_fact_type(cls, value: Any) -> str:
        return "experience" if str(value or "").strip().lower() == "experience" else "world"


class ExtractionResponse(_Lenient):
    facts: list[FactItem] = Field(default_factory=list)


# -- prompt ----------------------------------------------------------------------------------

_SYSTEM = """\
You build the long-term memory of an AI agent. You receive the turns of one conversation (or \
the pieces of one document), each with a message_id, a speaker and an ISO timestamp. Turn them \
into the few facts worth remembering.

How to write facts:
- Prefer a handful of rich facts (usually 2 to 5 per chunk, fewer for a short chunk) over many \
small ones. One fact covers one whole exchange or topic: keep the back-and-forth together.
- Each fact is narrative and self-contained: a reader who never saw the conversation must \
understand it. Say who said or did what, why they did it, and how it ended.
- Replace every pronoun and possessive with the person's name ("she" -> "Alice", "their \
dog" -> "Alice and Bob's dog"). A speaker saying "I" is the speaker named in the turn.
- Make relative dates absolute from the timestamp of the turn they appear in ("yesterday" in a \
turn of 2024-03-05 -> "on 2024-03-04") and write the absolute date in the text.
- Keep concrete details: names, numbers, places, modifiers (first, new, favorite), family, \
jobs, origins, relationships, photos or other media mentioned.
- Leave out greetings, small talk, filler and remarks about the conversation itself. If \
nothing is worth remembering, return an empty list.

Fields of each fact:
- text: the fact.
- fact_type: "experience" for what the agent itself (the assistant speaker) did, said or \
went through; "world" for everything about other people and the world.
- occurred_start / occurred_end: when the fact happened (not when it was mentioned), as \
YYYY-MM-DD. A single day: both the same. A period: its first and last day ("in February \
2024" -> 2024-02-01 and 2024-02-29). Vague periods ("lately"): estimate from the turn's date. \
Unknown: null.
- entities: every person, org, location, product, concept or event named in the fact, with \
its full name as the conversation gives it and its kind (person, org, location, product, \
concept, event, other).
- source_message_ids: the message_id of every turn the fact is drawn from. Use only ids that \
appear in the input.
- causal: links from this fact to another fact of your list, by its 0-based position in \
`facts`: relation "causes", "caused_by", "enables" or "prevents". Only for cause and effect \
stated or clearly implied in the turns; otherwise an empty list.

Answer with one JSON object: {"facts": [...]}."""


def build_messages(chunk: ExtractionInput | ChunkEvent) -> tuple[str, str]:
    """The (system, user) messages of the extraction call for one chunk."""
    data = chunk if isinstance(chunk, ExtractionInput) else ExtractionInput.from_chunk(chunk)
    payload = json.dumps(data.model_dump(exclude_none=True), ensure_ascii=False, indent=1)
    user = f"Extract the facts of these turns.\n\n{payload}"
    return _SYSTEM, user
