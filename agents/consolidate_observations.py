"""Observations: many facts about one entity consolidated into a few conclusions
(tempr.graph.v1 → FactsEvent of type `observation` on tempr.facts.v1).

Runs only with an LLM configured. For each entity that new world/experience facts mention
(and that has at least `MIN_FACTS` facts), the LLM sees its recent facts and the observations
drawn so far and rewrites or adds observations, each citing the facts behind it. An observation
keeps its id when it is rewritten, so its evidence (and proof count) grows instead of a
near-copy appearing; a new one too close to an existing one is folded into it.
"""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

import asyncpg
import faust
import numpy as np

from tempr.inference.embeddings import Embedder
from tempr.inference.llm import LLMClient
from tempr.inference.prompts import consolidate_observations as prompt
from tempr.schemas.events import (
    EntityMention,
    ExtractedFact,
    FactsEvent,
    GraphEvent,
    encode_event,
)
from tempr.schemas.ids import stable_id, text_key
from tempr.store import banks, observations
from tempr.store.banks import to_bank
from tempr.streams.context import WorkerContext
from tempr.streams.stage import Record, StageSpec, Topics, run_stage
from tempr.streams.topics import bank_key

__all__ = ["MIN_FACTS", "SAME_OBSERVATION_COSINE", "SPEC", "consolidate_entity", "register"]

log = logging.getLogger(__name__)

MIN_FACTS = 2  # one fact is a fact, not a pattern
SAME_OBSERVATION_COSINE = 0.9
_EVIDENCE_KINDS = frozenset({"world", "experience"})
_FACTS_SHOWN = 30
_ENTITIES_PER_BATCH = 8


async def consolidate_entity(
    pool: asyncpg.Pool,
    llm: LLMClient,
    embedder: Embedder,
    *,
    bank_id: str,
    entity_id: UUID,
    entity: tuple[str, str],
    new_facts: list[ExtractedFact],
) -> FactsEvent | None:
    """The observation facts for one entity after these new facts (None: nothing to say)."""
    older = await observations.entity_facts(
        pool, bank_id, entity_id, exclude=[f.fact_id for f in new_facts], limit=_FACTS_SHOWN
    )
    shown: list[tuple[UUID, str, list[str], datetime | None]] = [
        (f.fact_id, f.text, f.source_message_ids, f.occurred_start or f.mentioned_at) for f in new_facts
    ]
    shown += [(r["id"], r["text"], list(r["source_message_ids"]), r["when_at"]) for r in older]
    shown = shown[:_FACTS_SHOWN]
    if len(shown) < MIN_FACTS:
        return None
    existing = await observations.entity_observations(pool, bank_id, entity_id)
    system, user = prompt.build_messages(entity[0], [r["text"] for r in existing], [s[1] for s in shown])
    out = await llm.complete_structured(
        system=system, user=user, response_model=prompt.Observations, schema_name="consolidate_observations"
    )
    drafts = [o for o in out.observations if any(1 <= n <= len(shown) for n in o.facts)]
    if not drafts:
        return None
    vectors = await embedder.aencode([o.text for o in drafts])
    existing_vectors = [None if r["embedding"] is None else r["embedding"].to_numpy() for r in existing]
    facts: dict[UUID, ExtractedFact] = {}
    for draft, vector in zip(drafts, vectors, strict=True):
        backing = [shown[n - 1] for n in dict.fromkeys(draft.facts) if 1 <= n <= len(shown)]
        target = _same_as(draft.updates, vector, existing_vectors)
        oid = (
            existing[target]["id"]
            if target is not None
            else stable_id(bank_id, "observation", entity_id, text_key(draft.text))
        )
        times = [b[3] for b in backing if b[3] is not None]
        previous = facts.get(oid)
        evidence = list(
            dict.fromkeys([*(previous.evidence_ids if previous else []), *(b[0] for b in backing)])
        )
        facts[oid] = ExtractedFact(
            fact_id=oid,
            text=draft.text.strip(),
            fact_type="observation",
            occurred_start=min(times) if times else None,
            occurred_end=max(times) if times else None,
            mentioned_at=datetime.now(UTC),
            entities=[EntityMention(name=entity[0], kind=entity[1])],
            source_message_ids=sorted({m for b in backing for m in b[2]}),
            evidence_ids=evidence,
            metadata={"formed_by": "consolidate_observations", "entity_id": str(entity_id)},
            embedding=[float(x) for x in vector],
        )
    return FactsEvent(
        bank_id=bank_id,
        chunk_id=stable_id(bank_id, "observations", entity_id, *sorted(str(f) for f in facts)),
        chunk_text=f"observations about {entity[0]}",
        message_event_ids=[],
        facts=list(facts.values()),
    )


def _same_as(updates: int | None, vector: np.ndarray, existing: list[np.ndarray | None]) -> int | None:
    """Which existing observation this draft rewrites: the one the model named, else one whose
    embedding is nearly the same."""
    if updates is not None and 1 <= updates <= len(existing):
        return updates - 1
    best, best_cos = None, SAME_OBSERVATION_COSINE
    for i, other in enumerate(existing):
        if other is None:
            continue
        cos = float(np.dot(vector, other) / (np.linalg.norm(vector) * np.linalg.norm(other) or 1.0))
        if cos >= best_cos:
            best, best_cos = i, cos
    return best


SPEC = StageSpec(
    name="consolidate_observations",
    source="graph",
    accepts=(GraphEvent,),
    emits=(FactsEvent,),
    batch=64,
    within=1.0,
    foreign="skip",  # the materializer dead-letters what nobody can read
    needs_llm=True,
)


def register(app: faust.App, topics: Topics, ctx: WorkerContext) -> None:
    async def handle(records: list[Record[GraphEvent]]) -> None:
        llm = ctx.require_llm()
        # (bank, entity) → the new facts that mention it.
        touched: dict[tuple[str, UUID], dict[UUID, ExtractedFact]] = defaultdict(dict)
        for record in records:
            graph = record.event
            kinds = {f.fact_id: f for f in graph.facts if f.fact_type in _EVIDENCE_KINDS}
            for ue in graph.unit_entities:
                if ue.unit_id in kinds:
                    touched[(graph.bank_id, ue.entity_id)][ue.unit_id] = kinds[ue.unit_id]
        if not touched:
            return
        names = await observations.entity_names(ctx.db, sorted({e for _, e in touched}))
        per_bank: dict[str, list[tuple[UUID, dict[UUID, ExtractedFact]]]] = defaultdict(list)
        for (bank_id, entity_id), new in touched.items():
            if entity_id in names:
                per_bank[bank_id].append((entity_id, new))
        for bank_id, entities in per_bank.items():
            row = await banks.get_bank(ctx.db, bank_id)
            if row is None or to_bank(row).config.observations is False:
                continue
            entities.sort(key=lambda item: -len(item[1]))
            jobs = [
                consolidate_entity(
                    ctx.db,
                    llm,
                    ctx.embeddings,
                    bank_id=bank_id,
                    entity_id=entity_id,
                    entity=names[entity_id],
                    new_facts=list(new.values()),
                )
                for entity_id, new in entities[:_ENTITIES_PER_BATCH]
            ]
            # A failure (the LLM's included) fails the batch: the harness retries its records
            # one by one and dead-letters the one whose entity cannot be consolidated.
            for result in await asyncio.gather(*jobs):
                if result is not None:
                    await (await topics.facts.send(key=bank_key(bank_id), value=encode_event(result)))

    @app.agent(getattr(topics, SPEC.source), name=SPEC.name)
    async def consolidate_observations(stream: Any) -> None:
        await run_stage(stream, SPEC, ctx, topics, handle)
