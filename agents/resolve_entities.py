"""Resolver and linker: facts → graph updates (tempr.facts.v1 → tempr.graph.v1).

Keyed by bank, so one bank's facts are resolved one batch at a time by one worker. New
entities are upserted here at once (ids are deterministic), so the next batch resolves
against them even before the materializer has caught up; facts not yet materialized are
remembered per bank for linking.
"""

from __future__ import annotations

import logging
from collections import defaultdict, deque
from typing import Any
from uuid import UUID

import asyncpg
import faust

from tempr.agents.resolution.entities import KnownEntity, Resolution
from tempr.agents.resolution.graph_update import (
    ResolvedFacts,
    borderline_merges,
    fact_time,
    link_facts,
    resolve_facts,
)
from tempr.agents.resolution.links import FactPoint
from tempr.agents.resolution.llm_judge import judge_borderline, pair_key
from tempr.inference.llm import LLMClient
from tempr.schemas.events import FactsEvent, GraphEvent, encode_event
from tempr.store import entities as entity_store
from tempr.store import graph_context
from tempr.streams.context import WorkerContext
from tempr.streams.stage import Record, StageSpec, Topics, run_stage
from tempr.streams.topics import bank_key

__all__ = ["SPEC", "register", "resolve_bank_batch"]

log = logging.getLogger(__name__)

_RECENT_PER_BANK = 400


def _points(rows: list[asyncpg.Record]) -> list[FactPoint]:
    return [
        FactPoint(
            unit_id=r["id"],
            when=r["when_at"],
            embedding=None if r["embedding"] is None else r["embedding"].to_numpy(),
            entity_ids=set(r["entity_ids"]),
        )
        for r in rows
    ]


async def _neighbours(pool: asyncpg.Pool, batch: list[ResolvedFacts]) -> list[list[FactPoint]]:
    """Stored facts each event's new facts may link to: near them in time (per event), by
    meaning (one exact query for every fact of the batch) and through their entities (one
    query for every entity of the batch)."""
    bank = batch[0].event.bank_id
    found: list[dict[UUID, FactPoint]] = [{} for _ in batch]
    for i, resolved in enumerate(batch):
        times = [t for f in resolved.event.facts if (t := fact_time(f)) is not None]
        if times:
            rows = await graph_context.temporal_neighbours(pool, bank, min(times), max(times))
            found[i].update((p.unit_id, p) for p in _points(rows))
    owner = [i for i, r in enumerate(batch) for f in r.event.facts if f.embedding is not None]
    embeddings = [f.embedding for r in batch for f in r.event.facts if f.embedding is not None]
    for row, point in _with_points(await graph_context.semantic_neighbours_of_many(pool, bank, embeddings)):
        for i in {owner[q] for q in row["queries"]}:
            found[i][point.unit_id] = point
    wanted = [{ue.entity_id for ue in r.unit_entities} for r in batch]
    all_entities = sorted(set().union(*wanted), key=lambda e: e.int)
    for row, point in _with_points(await graph_context.entity_neighbours(pool, bank, all_entities)):
        for i, theirs in enumerate(wanted):
            if theirs.intersection(row["via"]):
                found[i][point.unit_id] = point
    return [list(f.values()) for f in found]


def _with_points(rows: list[asyncpg.Record]) -> zip[tuple[asyncpg.Record, FactPoint]]:
    return zip(rows, _points(rows), strict=True)


async def resolve_bank_batch(
    pool: asyncpg.Pool, events: list[FactsEvent], recent: deque[FactPoint], llm: LLMClient | None = None
) -> list[GraphEvent]:
    """One bank's events, in order: resolve (an LLM judging borderline merges when configured),
    persist the entities (one statement for the batch), link."""
    bank = events[0].bank_id
    known = {
        r["id"]: KnownEntity(
            entity_id=r["id"],
            canonical_name=r["canonical_name"],
            kind=r["kind"],
            aliases=list(r["aliases"]),
            mention_count=r["mention_count"],
            last_seen=r["last_seen"],
        )
        for r in await graph_context.known_entities(pool, bank)
    }
    batch: list[ResolvedFacts] = []
    for event in events:
        decide = None
        if llm is not None and (pairs := borderline_merges(event, known)):
            decisions = await judge_borderline(llm, pairs)

            def decide(r: Resolution, c: KnownEntity, _f: object, d: dict = decisions) -> bool:
                return d.get(pair_key(r, c), True)

        batch.append(resolve_facts(event, known, decide))
    touched = [e for resolved in batch for e in resolved.entities.values()]
    if touched:
        async with pool.acquire() as conn:
            await entity_store.upsert_entities(conn, bank, touched)
    out: list[GraphEvent] = []
    for resolved, neighbours in zip(batch, await _neighbours(pool, batch), strict=True):
        existing = {p.unit_id: p for p in recent}
        existing.update({p.unit_id: p for p in neighbours})
        out.append(link_facts(resolved, list(existing.values())))
        recent.extend(resolved.points)
    return out


SPEC = StageSpec(
    name="resolve_entities", source="facts", accepts=(FactsEvent,), emits=(GraphEvent,), batch=64
)


def register(app: faust.App, topics: Topics, ctx: WorkerContext) -> None:
    recent: dict[str, deque[FactPoint]] = defaultdict(lambda: deque(maxlen=_RECENT_PER_BANK))

    async def handle(records: list[Record[FactsEvent]]) -> None:
        by_bank: dict[str, list[FactsEvent]] = defaultdict(list)
        for record in records:
            by_bank[record.event.bank_id].append(record.event)
        for bank, events in by_bank.items():
            for update in await resolve_bank_batch(ctx.db, events, recent[bank], ctx.llm):
                await (await topics.graph.send(key=bank_key(bank), value=encode_event(update)))

    @app.agent(getattr(topics, SPEC.source), name=SPEC.name)
    async def resolve_entities(stream: Any) -> None:
        await run_stage(stream, SPEC, ctx, topics, handle)
