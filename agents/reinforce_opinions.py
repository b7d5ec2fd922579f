"""Reinforcer: new facts re-evaluate the opinions they touch (tempr.graph.v1 → OpinionUpdate).

Runs only with an LLM configured. An opinion is touched when a new world/experience fact
shares an entity with it; the LLM judges the facts against the opinion in the bank's voice.
The update goes back to the graph topic as an event and the materializer applies it, so every
write to the memory still has one author and a replay of the log reproduces it.
"""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict
from typing import Any
from uuid import UUID

import asyncpg
import faust

from tempr.inference.embeddings import Embedder
from tempr.inference.llm import LLMClient
from tempr.inference.prompts import evaluate_opinion
from tempr.schemas.banks import Bank
from tempr.schemas.events import ExtractedFact, GraphEvent, OpinionUpdate, encode_event
from tempr.schemas.ids import stable_id
from tempr.store import banks, opinions
from tempr.store.banks import to_bank
from tempr.streams.context import WorkerContext
from tempr.streams.stage import Record, StageSpec, Topics, run_stage
from tempr.streams.topics import bank_key

__all__ = ["CONFIDENCE_STEP", "EVIDENCE_KINDS", "SPEC", "evaluate_bank", "register"]

log = logging.getLogger(__name__)

# Bounded moves per update (from the disposition paper): one piece of evidence never swings
# a conviction far; a contradiction replaces the text and confidence instead.
CONFIDENCE_STEP = {"reinforce": 0.10, "weaken": -0.15}
EVIDENCE_KINDS = frozenset({"world", "experience"})
_MAX_OPINIONS_PER_BATCH = 10
_MAX_FACTS_PER_EVALUATION = 10


async def evaluate_bank(
    pool: asyncpg.Pool, llm: LLMClient, embedder: Embedder, bank: Bank, events: list[GraphEvent]
) -> list[OpinionUpdate]:
    """The updates one batch of a bank's graph events causes (possibly none)."""
    facts: dict[UUID, ExtractedFact] = {}
    entities_of: dict[UUID, set[UUID]] = defaultdict(set)
    for event in events:
        kinds = {f.fact_id: f for f in event.facts if f.fact_type in EVIDENCE_KINDS}
        facts.update(kinds)
        for ue in event.unit_entities:
            if ue.unit_id in kinds:
                entities_of[ue.unit_id].add(ue.entity_id)
    all_entities = sorted({e for ids in entities_of.values() for e in ids})
    if not all_entities:
        return []
    touched = await opinions.opinions_about(pool, bank.bank_id, all_entities, limit=_MAX_OPINIONS_PER_BATCH)
    jobs = []
    for op in touched:
        shared = set(op["shared_entity_ids"])
        rested_on = set(op["evidence_ids"])
        evidence = [
            facts[fid] for fid, ents in entities_of.items() if ents & shared and fid not in rested_on
        ][:_MAX_FACTS_PER_EVALUATION]
        if evidence:
            update_id = stable_id(
                bank.bank_id, "opinion-update", op["id"], *sorted(str(f.fact_id) for f in evidence)
            )
            jobs.append((op, evidence, update_id))
    done = await opinions.applied_updates(pool, [j[2] for j in jobs])
    gate = asyncio.Semaphore(4)

    async def judge(
        op: asyncpg.Record, evidence: list[ExtractedFact], update_id: UUID
    ) -> OpinionUpdate | None:
        system, user = evaluate_opinion.build_messages(
            name=bank.name,
            background=bank.background,
            disposition=bank.disposition,
            opinion=op["text"],
            confidence=op["confidence"],
            facts=[f.text for f in evidence],
        )
        async with gate:
            verdict = await llm.complete_structured(
                system=system,
                user=user,
                response_model=evaluate_opinion.OpinionEvaluation,
                schema_name="evaluate_opinion",
            )
        if verdict.verdict == "neutral":
            return None
        revised_embedding = None
        if verdict.verdict == "contradict" and verdict.revised_text:
            revised_embedding = [float(x) for x in (await embedder.aencode([verdict.revised_text]))[0]]
        return OpinionUpdate(
            update_id=update_id,
            bank_id=bank.bank_id,
            opinion_id=op["id"],
            verdict=verdict.verdict,
            confidence_delta=CONFIDENCE_STEP.get(verdict.verdict, CONFIDENCE_STEP["weaken"]),
            revised_text=verdict.revised_text if verdict.verdict == "contradict" else None,
            revised_confidence=verdict.revised_confidence if verdict.verdict == "contradict" else None,
            revised_embedding=revised_embedding,
            evidence_ids=[f.fact_id for f in evidence],
            evidence_message_ids=sorted({m for f in evidence for m in f.source_message_ids}),
            reasoning=verdict.reasoning,
        )

    results = await asyncio.gather(*(judge(*job) for job in jobs if job[2] not in done))
    return [u for u in results if u is not None]


SPEC = StageSpec(
    name="reinforce_opinions",
    source="graph",
    accepts=(GraphEvent,),
    emits=(OpinionUpdate,),
    batch=64,
    within=0.5,
    foreign="skip",  # the materializer dead-letters what nobody can read
    needs_llm=True,
)


def register(app: faust.App, topics: Topics, ctx: WorkerContext) -> None:
    async def handle(records: list[Record[GraphEvent]]) -> None:
        llm = ctx.require_llm()
        by_bank: dict[str, list[GraphEvent]] = defaultdict(list)
        for record in records:
            if any(f.fact_type in EVIDENCE_KINDS for f in record.event.facts):
                by_bank[record.event.bank_id].append(record.event)
        for bank_id, events in by_bank.items():
            row = await banks.get_bank(ctx.db, bank_id)
            if row is None:
                continue
            bank = to_bank(row)
            if bank.config.reinforce_opinions is False:
                continue
            for update in await evaluate_bank(ctx.db, llm, ctx.embeddings, bank, events):
                await (await topics.graph.send(key=bank_key(bank_id), value=encode_event(update)))

    @app.agent(getattr(topics, SPEC.source), name=SPEC.name)
    async def reinforce_opinions(stream: Any) -> None:
        await run_stage(stream, SPEC, ctx, topics, handle)
