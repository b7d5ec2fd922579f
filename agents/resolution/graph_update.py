"""A chunk's facts → the graph update the materializer writes: entities, mentions, links.

Pure: the caller loads the bank's known entities and the facts new ones may link to,
between the two steps (which facts are neighbours depends on the resolved entities).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from uuid import UUID

from tempr.agents.resolution.entities import (
    KnownEntity,
    Resolution,
    display_name,
    entity_id_for,
    merge_resolution,
    resolve_mentions,
)
from tempr.agents.resolution.links import CausalEdge, FactPoint, build_links
from tempr.schemas.events import ExtractedFact, FactsEvent, GraphEvent, ResolvedEntity, UnitEntity

__all__ = ["ResolvedFacts", "fact_time", "link_facts", "resolve_facts"]


def fact_time(fact: ExtractedFact) -> datetime | None:
    return fact.occurred_start or fact.mentioned_at


@dataclass
class ResolvedFacts:
    event: FactsEvent
    entities: dict[UUID, ResolvedEntity] = field(default_factory=dict)
    unit_entities: list[UnitEntity] = field(default_factory=list)
    points: list[FactPoint] = field(default_factory=list)


Decide = Callable[[Resolution, KnownEntity, ExtractedFact], bool]


def resolve_facts(
    event: FactsEvent, known: dict[UUID, KnownEntity], decide: Decide | None = None
) -> ResolvedFacts:
    """Resolve every mention against `known`, which is updated in place so the next chunk of
    the same batch sees the entities this one created.

    `decide` confirms borderline merges (an LLM's judgement when one is configured); a merge
    it rejects becomes a new entity of its own. Without it the rules decide.
    """
    out = ResolvedFacts(event)
    for fact in event.facts:
        when = fact_time(fact)
        ids: list[UUID] = []
        found = resolve_mentions(fact.entities, list(known.values()), bank_id=event.bank_id, when=when)
        for resolution in found:
            if decide is not None and resolution.borderline and not resolution.is_new:
                candidate = known.get(resolution.entity_id)
                if candidate is not None and not decide(resolution, candidate, fact):
                    resolution = as_new_entity(event.bank_id, resolution)
            entity = merge_resolution(known.get(resolution.entity_id), resolution, when)
            known[entity.entity_id] = entity
            previous = out.entities.get(entity.entity_id)
            first = [t for t in (when, previous.first_seen if previous else None) if t is not None]
            out.entities[entity.entity_id] = ResolvedEntity(
                entity_id=entity.entity_id,
                canonical_name=entity.canonical_name,
                kind=entity.kind,
                aliases=sorted(set(entity.aliases) | set(previous.aliases if previous else [])),
                first_seen=min(first, default=None),
                last_seen=entity.last_seen,
            )
            if entity.entity_id not in ids:
                ids.append(entity.entity_id)
                out.unit_entities.append(UnitEntity(unit_id=fact.fact_id, entity_id=entity.entity_id))
        out.points.append(_point(fact, ids, event.facts))
    return out


def as_new_entity(bank_id: str, resolution: Resolution) -> Resolution:
    return replace(
        resolution,
        entity_id=entity_id_for(bank_id, resolution.surface, resolution.kind),
        canonical_name=display_name(resolution.surface),
        is_new=True,
        matched_by="new",
        borderline=False,
    )


def borderline_merges(
    event: FactsEvent, known: dict[UUID, KnownEntity]
) -> list[tuple[Resolution, KnownEntity, ExtractedFact]]:
    """The merges `resolve_facts` would ask about, found on a copy of `known`."""
    asked: list[tuple[Resolution, KnownEntity, ExtractedFact]] = []

    def record(resolution: Resolution, candidate: KnownEntity, fact: ExtractedFact) -> bool:
        asked.append((resolution, candidate, fact))
        return True

    resolve_facts(event, copy.deepcopy(known), decide=record)
    return asked


def _point(fact: ExtractedFact, entity_ids: list[UUID], siblings: Sequence[ExtractedFact]) -> FactPoint:
    causal: list[CausalEdge] = [
        (siblings[c.target_index].fact_id, c.relation, c.weight)
        for c in fact.causal
        if c.target_index < len(siblings) and siblings[c.target_index].fact_id != fact.fact_id
    ]
    return FactPoint(
        unit_id=fact.fact_id,
        when=fact_time(fact),
        embedding=fact.embedding,
        entity_ids=set(entity_ids),
        causal=causal,
    )


def link_facts(resolved: ResolvedFacts, existing: Sequence[FactPoint]) -> GraphEvent:
    own = {p.unit_id for p in resolved.points}
    event = resolved.event
    return GraphEvent(
        bank_id=event.bank_id,
        chunk_id=event.chunk_id,
        chunk_text=event.chunk_text,
        conversation_id=event.conversation_id,
        document_id=event.document_id,
        message_event_ids=event.message_event_ids,
        message_parts=event.message_parts,
        facts=event.facts,
        entities=list(resolved.entities.values()),
        unit_entities=resolved.unit_entities,
        links=build_links(resolved.points, [p for p in existing if p.unit_id not in own]),
        correction_id=event.correction_id,
    )
