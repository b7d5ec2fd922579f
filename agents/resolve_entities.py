"""Resolver and linker: facts → graph updates (tempr.facts.v1 → tempr.graph.v1).

Keyed by bank, so one bank's facts are resolved one batch at a time by one worker. New
entities are upserted here at once (ids are deterministic), so the next batch resolves
against them even before the materializer has caught up; facts not yet materialized are
remembered per bank for linking.
"""

from __future__ import annotations

import asyncio
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

__all__ = ["SPEC", "register", "resolve_bank_batch", "resolve_batches"]

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
    meaning (the nearest of each new fact) and through their entities, for the events of many
    banks at once: one statement per kind, not one per bank."""
    found: list[dict[UUID, FactPoint]] = [{} for _ in batch]
    windows: list[tuple[str, Any, Any]] = []
    windowed: list[int] = []
    for i, resolved in enumerate(batch):
        times = [t for f in resolved.event.facts if (t := fact_time(f)) is not None]
        if times:
            windows.append((resolved.event.bank_id, min(times), max(times)))
            windowed.append(i)
    for i, rows in zip(windowed, await graph_context.temporal_neighbours_of(pool, windows), strict=True):
        found[i].update((p.unit_id, p) for p in _points(rows))
    await _semantic_neighbours(pool, batch, found)
    wanted = [{ue.entity_id for ue in r.unit_entities} for r in batch]
    all_entities = sorted(set().union(*wanted), key=lambda e: e.int)
    banks = [r.event.bank_id for r in batch]
    rows = await graph_context.entity_neighbours_across(pool, banks, all_entities)
    for row, point in _with_points(rows):
        for i, theirs in enumerate(wanted):
            if theirs.intersection(row["via"]):
                found[i][point.unit_id] = point
    return [list(f.values()) for f in found]


async def _semantic_neighbours(
    pool: asyncpg.Pool, batch: list[ResolvedFacts], found: list[dict[UUID, FactPoint]]
) -> None:
    """Exact for the banks without an index of their own, all in one statement; through its own
    index for each bank that has one (a shared index filtered by bank can miss a small bank's)."""
    owner = [i for i, r in enumerate(batch) for f in r.event.facts if f.embedding is not None]
    queries = [
        (r.event.bank_id, f.embedding) for r in batch for f in r.event.facts if f.embedding is not None
    ]
    if not queries:
        return
    indexed = await graph_context.indexed_banks(pool, sorted({bank for bank, _ in queries}))
    exact = [q for q, (bank, _) in enumerate(queries) if bank not in indexed]
    groups = [(exact, await graph_context.semantic_neighbours_across(pool, [queries[q] for q in exact]))]
    for bank in sorted(indexed):
        mine = [q for q, (b, _) in enumerate(queries) if b == bank]
        vectors = [queries[q][1] for q in mine]
        groups.append(
            (mine, await graph_context.semantic_neighbours_of_many(pool, bank, vectors, indexed=True))
        )
    for positions, rows in groups:
        for row, point in _with_points(rows):
            for i in {owner[positions[q]] for q in row["queries"]}:
                found[i][point.unit_id] = point


def _with_points(rows: list[asyncpg.Record]) -> zip[tuple[asyncpg.Record, FactPoint]]:
    return zip(rows, _points(rows), strict=True)


def _known(rows: list[asyncpg.Record]) -> dict[UUID, KnownEntity]:
    return {
        r["id"]: KnownEntity(
            entity_id=r["id"],
            canonical_name=r["canonical_name"],
            kind=r["kind"],
            aliases=list(r["aliases"]),
            mention_count=r["mention_count"],
            last_seen=r["last_seen"],
        )
        for r in rows
    }


async def _resolve(
    events: list[FactsEvent], known: dict[UUID, KnownEntity], llm: LLMClient | None
) -> list[ResolvedFacts]:
    """One bank's events, in order, against its known entities (updated in place)."""
    batch: list[ResolvedFacts] = []
    for event in events:
        decide = None
        if llm is not None and (pairs := borderline_merges(event, known)):
            decisions = await judge_borderline(llm, pairs)

            def decide(r: Resolution, c: KnownEntity, _f: object, d: dict = decisions) -> bool:
                return d.get(pair_key(r, c), True)

        batch.append(resolve_facts(event, known, decide))
    return batch


async def resolve_batches(
    pool: asyncpg.Pool,
    by_bank: dict[str, list[FactsEvent]],
    recent: dict[str, deque[FactPoint]],
    llm: LLMClient | None = None,
) -> dict[str, list[GraphEvent]]:
    """Each bank's events, in order: resolve (an LLM judging borderline merges when configured),
    persist the entities, link. A live stream's batch holds one event of each of many banks,
    so every read and write here covers all the batch's banks at once."""
    known_rows = await graph_context.known_entities_of(pool, list(by_bank))
    resolved = {
        bank: await _resolve(events, _known(known_rows[bank]), llm) for bank, events in by_bank.items()
    }
    touched = {bank: [e for r in batch for e in r.entities.values()] for bank, batch in resolved.items()}
    if any(touched.values()):
        async with pool.acquire() as conn:
            for bank in sorted(b for b, entities in touched.items() if entities):
                await entity_store.upsert_entities(conn, bank, touched[bank])
    flat = [r for batch in resolved.values() for r in batch]
    neighbours = iter(await _neighbours(pool, flat))
    out: dict[str, list[GraphEvent]] = {}
    for bank, batch in resolved.items():
        mine = recent[bank]
        out[bank] = []
        for r in batch:
            existing = {p.unit_id: p for p in mine}
            existing.update({p.unit_id: p for p in next(neighbours)})
            out[bank].append(link_facts(r, list(existing.values())))
            mine.extend(r.points)
    return out


async def resolve_bank_batch(
    pool: asyncpg.Pool, events: list[FactsEvent], recent: deque[FactPoint], llm: LLMClient | None = None
) -> list[GraphEvent]:
    """`resolve_batches` of one bank."""
    bank = events[0].bank_id
    return (await resolve_batches(pool, {bank: events}, {bank: recent}, llm))[bank]


SPEC = StageSpec(
    name="resolve_entities", source="facts", accepts=(FactsEvent,), emits=(GraphEvent,), batch=64
)


def register(app: faust.App, topics: Topics, ctx: WorkerContext) -> None:
    recent: dict[str, deque[FactPoint]] = defaultdict(lambda: deque(maxlen=_RECENT_PER_BANK))

    async def handle(records: list[Record[FactsEvent]]) -> None:
        by_bank: dict[str, list[FactsEvent]] = defaultdict(list)
        for record in records:
            by_bank[record.event.bank_id].append(record.event)
        # Every update sent, then every delivery awaited: awaiting each in turn cost a broker
        # round trip per event, which capped a live stream (one event per bank) on its own.
        await asyncio.gather(
            *[
                await topics.graph.send(key=bank_key(bank), value=encode_event(update))
                for bank, updates in (await resolve_batches(ctx.db, by_bank, recent, ctx.llm)).items()
                for update in updates
            ]
        )

    @app.agent(getattr(topics, SPEC.source), name=SPEC.name)
    async def resolve_entities(stream: Any) -> None:
        await run_stage(stream, SPEC, ctx, topics, handle)
