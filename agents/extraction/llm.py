"""LLM-mode extraction: one structured call per chunk, then the answer made trustworthy.

The model's answer is checked against the chunk rather than believed: cited message ids must
exist in the chunk, causal targets must be other facts of the same answer, dates must parse.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import UTC, date, datetime, time
from uuid import UUID

from tempr.inference.llm import LLMClient
from tempr.inference.prompts.extract_facts import (
    PROMPT_VERSION,
    ExtractionInput,
    ExtractionResponse,
    FactItem,
    build_messages,
)
from tempr.schemas.events import CausalRelation, ChunkEvent, EntityMention, ExtractedFact, MessageEvent
from tempr.schemas.ids import stable_id

__all__ = ["SCHEMA_NAME", "extract_with_llm", "fact_id", "facts_from_response", "parse_when"]

SCHEMA_NAME = "extract_facts"

_YEAR = re.compile(r"^\d{4}$")
_YEAR_MONTH = re.compile(r"^(\d{4})-(\d{2})$")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


async def extract_with_llm(chunk: ChunkEvent, client: LLMClient) -> list[ExtractedFact]:
    """Facts of one chunk; raises `UpstreamLLMError` when the LLM cannot deliver."""
    system, user = build_messages(ExtractionInput.from_chunk(chunk))
    response = await client.complete_structured(
        system=system, user=user, response_model=ExtractionResponse, schema_name=SCHEMA_NAME
    )
    return facts_from_response(chunk, response)


def facts_from_response(chunk: ChunkEvent, response: ExtractionResponse) -> list[ExtractedFact]:
    """Pure conversion of a validated answer into `ExtractedFact`s for `chunk`."""
    count = len(response.facts)
    return [_to_fact(chunk, item, index, count) for index, item in enumerate(response.facts)]


def _to_fact(chunk: ChunkEvent, item: FactItem, index: int, count: int) -> ExtractedFact:
    cited = _cited_messages(chunk, item.source_message_ids)
    source_ids = [m.message_id for m in cited]
    start = parse_when(item.occurred_start, end=False)
    end = parse_when(item.occurred_end, end=True)
    if start is not None and end is not None and end < start:
        end = None  # an inverted range is a model slip; the start is the likelier part
    return ExtractedFact(
        fact_id=fact_id(chunk, source_ids, index),
        text=item.text,
        fact_type=item.fact_type,
        occurred_start=start,
        occurred_end=end,
        mentioned_at=_latest_timestamp(cited),
        entities=_entities(item),
        causal=_causal(item, index, count),
        source_message_ids=source_ids,
        context=_first(m.context for m in cited),
        document_id=_first(m.document_id for m in cited) or chunk.document_id,
        conversation_id=_first(m.conversation_id for m in cited) or chunk.conversation_id,
        tags=_union(m.tags for m in cited),
        metadata={"extractor": "llm", "prompt_version": PROMPT_VERSION},
    )


def fact_id(chunk: ChunkEvent, source_ids: list[str], index: int) -> UUID:
    """Deterministic id from the cited messages and the position in the answer.

    Not from the chunk id: a replay or a redelivery may cut the same messages into chunks with
    other ids, and the facts must then upsert onto the same rows instead of duplicating. Message
    ids are the client's stable keys; the index separates facts that cite the same turns.
    """
    scope = chunk.conversation_id or chunk.document_id or ""
    parts = sorted({str(m.metadata["part"]) for m in chunk.messages if "part" in m.metadata})
    if parts:  # the parts of one long document cite the same message: keep their facts apart
        return stable_id(
            chunk.bank_id, "llm-fact", scope, ",".join(sorted(source_ids)), "part", *parts, index
        )
    return stable_id(chunk.bank_id, "llm-fact", scope, ",".join(sorted(source_ids)), index)


def _cited_messages(chunk: ChunkEvent, cited_ids: list[str]) -> list[MessageEvent]:
    # Ids the model invented are dropped; a fact citing nothing real cites the whole chunk,
    # since it was drawn from it.
    wanted = set(cited_ids)
    cited = [m for m in chunk.messages if m.message_id in wanted]
    return cited or list(chunk.messages)


def parse_when(value: str | None, *, end: bool) -> datetime | None:
    """An ISO date or datetime as aware UTC; a date-only value spans its whole day/month/year.

    `end=True` gives the last instant of a date-only value (occurred_end), otherwise the first.
    Unparseable values are None: a wrong date is worse than none.
    """
    if not value:
        return None
    text = value.strip()
    try:
        if _YEAR.match(text):
            year = int(text)
            return _day_edge(date(year, 12, 31) if end else date(year, 1, 1), end)
        if match := _YEAR_MONTH.match(text):
            first = date(int(match[1]), int(match[2]), 1)
            return _day_edge(_last_day_of_month(first) if end else first, end)
        if _DATE.match(text):
            return _day_edge(date.fromisoformat(text), end)
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)


def _day_edge(day: date, end: bool) -> datetime:
    return datetime.combine(day, time.max if end else time.min, tzinfo=UTC)


def _last_day_of_month(first: date) -> date:
    next_month = date(first.year + first.month // 12, first.month % 12 + 1, 1)
    return date.fromordinal(next_month.toordinal() - 1)


def _latest_timestamp(messages: list[MessageEvent]) -> datetime | None:
    stamps = [m.timestamp for m in messages if m.timestamp is not None]
    return max(stamps).astimezone(UTC) if stamps else None


def _entities(item: FactItem) -> list[EntityMention]:
    seen: set[str] = set()
    mentions = []
    for entity in item.entities:
        key = entity.name.casefold()
        if key not in seen:
            seen.add(key)
            mentions.append(EntityMention(name=entity.name, kind=entity.kind))
    return mentions


def _causal(item: FactItem, index: int, count: int) -> list[CausalRelation]:
    seen: set[tuple[int, str]] = set()
    relations = []
    for link in item.causal:
        key = (link.target_index, link.relation)
        if 0 <= link.target_index < count and link.target_index != index and key not in seen:
            seen.add(key)
            relations.append(CausalRelation(target_index=link.target_index, relation=link.relation))
    return relations


def _first(values: Iterable[str | None]) -> str | None:
    return next((v for v in values if v), None)


def _union(lists: Iterable[list[str]]) -> list[str]:
    return list(dict.fromkeys(tag for tags in lists for tag in tags))
