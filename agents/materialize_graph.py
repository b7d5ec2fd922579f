"""Materializer: graph updates → Postgres (tempr.graph.v1 → tables), then offset commit.

A batch is written in one transaction; its records are acked (so their offsets become
committable) only after that transaction commits. Every write is an upsert keyed by a
deterministic id, so a redelivered record changes nothing.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

import asyncpg
import faust

from tempr.agents.resolution.near_duplicates import same_statement
from tempr.schemas.events import (
    ExtractedFact,
    GraphEvent,
    MemoryLink,
    MessagePart,
    OpinionUpdate,
    ResolvedEntity,
)
from tempr.store import (
    bank_locks,
    banks,
    corrections,
    entities,
    forget,
    links,
    memories,
    messages,
    opinions,
    watermarks,
)
from tempr.streams.context import WorkerContext
from tempr.streams.stage import Record, StageSpec, Topics, run_stage

__all__ = [
    "NEAR_DUPLICATE_COSINE",
    "SPEC",
    "BatchWrites",
    "ChunkNearDuplicates",
    "apply_event",
    "apply_events",
    "apply_graph_event",
    "register",
    "same_statement_stored",
]

log = logging.getLogger(__name__)

NEAR_DUPLICATE_COSINE = 0.95


@dataclass
class BatchWrites:
    """Writes kept for the end of a batch's transaction: the full entity upserts and mention
    counts (rows the resolver also writes: locked only for the commit, in id order, so no
    convoy forms behind the open transaction), every link in one statement per bank, and the
    journal rows marked processed and the watermarks, each in one statement for the batch."""

    entities: dict[str, list[ResolvedEntity]] = field(default_factory=lambda: defaultdict(list))
    mentioned: set[UUID] = field(default_factory=set)
    links: dict[str, list[MemoryLink]] = field(default_factory=lambda: defaultdict(list))
    processed: list[UUID] = field(default_factory=list)
    processed_parts: list[MessagePart] = field(default_factory=list)
    offsets: dict[watermarks.WatermarkKey, int] = field(default_factory=dict)

    def advance(self, key: watermarks.WatermarkKey, offset: int) -> None:
        self.offsets[key] = max(offset, self.offsets.get(key, offset))

    async def flush(self, conn: asyncpg.Connection) -> None:
        for bank_id in sorted(self.entities):
            await entities.upsert_entities(conn, bank_id, self.entities[bank_id])
        if self.mentioned:
            await entities.refresh_mention_counts(conn, sorted(self.mentioned, key=lambda e: e.int))
        for bank_id in sorted(self.links):
            await links.upsert_links(conn, bank_id, self.links[bank_id])
        if self.processed or self.processed_parts:
            await messages.mark_processed(conn, self.processed, self.processed_parts)
        await watermarks.advance_watermarks(conn, self.offsets)
        self.entities.clear()
        self.mentioned.clear()
        self.links.clear()
        self.processed.clear()
        self.processed_parts.clear()
        self.offsets.clear()


async def apply_graph_event(
    conn: asyncpg.Connection, event: GraphEvent, later: BatchWrites, *, keep_chunk: bool = True
) -> int:
    """Write one chunk's facts and mentions now, its entities' updates, links and journal marks
    into `later`; returns the number of facts stored anew.

    Call through `apply_events`, which creates the banks and drops what belongs to a deleted
    bank or was forgotten first (`keep_chunk` False: the chunk's text holds a forgotten message).
    """
    if keep_chunk:
        await memories.upsert_chunk(
            conn,
            chunk_id=event.chunk_id,
            bank_id=event.bank_id,
            conversation_id=event.conversation_id,
            document_id=event.document_id,
            text=event.chunk_text,
            message_ids=sorted({mid for f in event.facts for mid in f.source_message_ids}),
        )
    stored_before = await memories.stored_ids(conn, [f.fact_id for f in event.facts])
    replaced: dict[Any, Any] = {}
    stored = 0
    # A chunk's facts all new (the usual case): their near-duplicate candidates in one statement.
    find = None if stored_before else await ChunkNearDuplicates.of(conn, event.bank_id, event.facts)
    for index, fact in enumerate(event.facts):
        exists = fact.fact_id in stored_before
        if exists:
            duplicate = None
        elif find is not None:
            duplicate = find.stored_as(index, replaced)
        else:
            duplicate = await same_statement_stored(conn, event.bank_id, fact)
        if duplicate is not None:
            await memories.merge_provenance(
                conn, duplicate, fact.source_message_ids, fact.evidence_ids, merged_id=fact.fact_id
            )
            replaced[fact.fact_id] = duplicate
            continue
        await memories.upsert_fact(conn, event.bank_id, event.chunk_id, fact)
        stored += 0 if exists else 1
    if event.entities:
        await entities.insert_missing_entities(conn, event.bank_id, event.entities)
        later.entities[event.bank_id].extend(event.entities)
    # Copies only where a near-duplicate replaced a fact (rare): a chunk carries ~26 links a fact.
    if event.unit_entities:
        pairs = [
            ue.model_copy(update={"unit_id": replaced[ue.unit_id]}) if ue.unit_id in replaced else ue
            for ue in event.unit_entities
        ]
        await entities.link_units_to_entities(conn, event.bank_id, pairs)
        later.mentioned.update(p.entity_id for p in pairs)
    later.links[event.bank_id].extend(
        lk.model_copy(
            update={
                "from_id": replaced.get(lk.from_id, lk.from_id),
                "to_id": replaced.get(lk.to_id, lk.to_id),
            }
        )
        if lk.from_id in replaced or lk.to_id in replaced
        else lk
        for lk in event.links
    )
    later.processed.extend(event.message_event_ids)
    later.processed_parts.extend(event.message_parts)
    return stored


def without_forgotten(event: GraphEvent, gone: set[UUID], gone_messages: set[str]) -> GraphEvent:
    """Drop the facts that were forgotten, or cite a forgotten message, with their mentions
    and links: a redelivery, a replay or a record still in flight never brings them back."""
    gone = gone | {f.fact_id for f in event.facts if gone_messages & set(f.source_message_ids)}
    if not gone:
        return event
    return event.model_copy(
        update={
            "facts": [f for f in event.facts if f.fact_id not in gone],
            "unit_entities": [ue for ue in event.unit_entities if ue.unit_id not in gone],
            "links": [lk for lk in event.links if lk.from_id not in gone and lk.to_id not in gone],
        }
    )


async def apply_correction_event(conn: asyncpg.Connection, event: GraphEvent, later: BatchWrites) -> None:
    """Idempotent: a correction already applied (or superseded) changes nothing."""
    assert event.correction_id is not None
    if not await corrections.apply_correction(conn, event.correction_id, event.facts[0].embedding):
        return
    if event.entities:
        await entities.insert_missing_entities(conn, event.bank_id, event.entities)
        later.entities[event.bank_id].extend(event.entities)
    if event.unit_entities:
        await entities.link_units_to_entities(conn, event.bank_id, event.unit_entities)
        later.mentioned.update(p.entity_id for p in event.unit_entities)
    later.links[event.bank_id].extend(lk for lk in event.links if lk.from_id != lk.to_id)


async def same_statement_stored(conn: asyncpg.Connection, bank_id: str, fact: ExtractedFact) -> Any:
    """A stored fact that says what `fact` says: the embedding proposes, the texts decide."""
    candidates = await memories.near_duplicate_candidates(
        conn, bank_id, fact, min_cosine=NEAR_DUPLICATE_COSINE
    )
    return next((c["id"] for c in candidates if same_statement(c["text"], fact.text)), None)


@dataclass
class ChunkNearDuplicates:
    """`same_statement_stored` for each fact of a chunk stored in turn, from one statement:
    a fact's candidates are the stored ones and the chunk's facts before it that were stored
    (not folded into another), nearest first, `_CANDIDATES` of them, as one query each found."""

    facts: list[ExtractedFact]
    candidates: list[list[memories.Candidate]]

    @classmethod
    async def of(
        cls, conn: asyncpg.Connection, bank_id: str, facts: list[ExtractedFact]
    ) -> ChunkNearDuplicates:
        found = await memories.near_duplicate_candidates_of_new(
            conn, bank_id, facts, min_cosine=NEAR_DUPLICATE_COSINE, limit=_CANDIDATES
        )
        return cls(facts, found)

    def stored_as(self, index: int, replaced: dict[Any, Any]) -> Any:
        text = self.facts[index].text
        kept = [
            c
            for c in self.candidates[index]
            if c.earlier is None or self.facts[c.earlier].fact_id not in replaced
        ][:_CANDIDATES]
        for c in kept:
            if c.earlier is None and c.text is not None and same_statement(c.text, text):
                return c.id
            if c.earlier is not None and same_statement(self.facts[c.earlier].text, text):
                return self.facts[c.earlier].fact_id
        return None


_CANDIDATES = 5


def _stale_for_deleted_bank(event: GraphEvent, check: forget.GraphEventCheck) -> bool:
    """For a bank that was deleted, an event whose messages are no longer in the journal (they
    went with the bank) is stale; messages accepted after a re-creation pass."""
    if check.deleted_at is None:
        return False
    if event.message_event_ids:
        return check.journaled < len(set(event.message_event_ids))
    # Derived units (opinions, observations) carry their own time.
    times = [f.mentioned_at for f in event.facts if f.mentioned_at is not None]
    return bool(times) and min(times) <= check.deleted_at


def _ask(event: GraphEvent) -> forget.GraphEventAsk:
    return forget.GraphEventAsk(
        bank_id=event.bank_id,
        message_ids=[m for f in event.facts for m in f.source_message_ids],
        unit_ids=[f.fact_id for f in event.facts],
        journal_ids=event.message_event_ids,
    )


async def apply_events(
    conn: asyncpg.Connection, events: Sequence[GraphEvent | OpinionUpdate], later: BatchWrites | None = None
) -> list[bool]:
    """Apply a batch's events in order; each False is an event that belongs to a deleted bank
    (nothing was written). What every event needs checked, and its bank created, is read and
    written once for the batch. With `later`, part of the writes wait there for the batch's
    `flush`; without, they are done here."""
    graph = [(i, e) for i, e in enumerate(events) if isinstance(e, GraphEvent)]
    found = await forget.graph_events_check(conn, [_ask(e) for _, e in graph])
    # The live graph events' checks, by position in `events`; a deleted bank's event has none.
    live = {i: c for (i, e), c in zip(graph, found, strict=True) if not _stale_for_deleted_bank(e, c)}
    await banks.ensure_banks(conn, (e.bank_id for i, e in graph if i in live and e.correction_id is None))
    own = later or BatchWrites()
    applied: list[bool] = []
    for i, event in enumerate(events):
        if isinstance(event, OpinionUpdate):
            await opinions.apply_opinion_update(conn, event)
        elif i not in live:
            applied.append(False)
            continue
        elif event.correction_id is not None:
            await apply_correction_event(conn, event, own)
        else:
            check = live[i]
            # A journal row missing under a live bank was forgotten: its text must not be stored again.
            keep_chunk = check.journaled == len(set(event.message_event_ids))
            await apply_graph_event(
                conn,
                without_forgotten(event, check.forgotten_facts, check.forgotten_messages),
                own,
                keep_chunk=keep_chunk,
            )
        applied.append(True)
    if later is None:
        await own.flush(conn)
    return applied


async def apply_event(
    conn: asyncpg.Connection, event: GraphEvent | OpinionUpdate, later: BatchWrites | None = None
) -> bool:
    """`apply_events` for one event."""
    return (await apply_events(conn, [event], later))[0]


SPEC = StageSpec(name="materialize_graph", source="graph", accepts=(GraphEvent, OpinionUpdate), batch=100)


def register(app: faust.App, topics: Topics, ctx: WorkerContext) -> None:
    async def handle(records: list[Record[GraphEvent | OpinionUpdate]]) -> None:
        # One transaction for the batch; the harness waits out a database outage and retries
        # record by record when one poisonous record sinks it.
        await _write_batch(ctx.db, [(r.source, r.event) for r in records])

    @app.agent(getattr(topics, SPEC.source), name=SPEC.name)
    async def materialize_graph(stream: Any) -> None:
        await run_stage(stream, SPEC, ctx, topics, handle)


async def _write_batch(pool: asyncpg.Pool, batch: list[tuple[Any, GraphEvent | OpinionUpdate]]) -> None:
    if not batch:
        return
    async with pool.acquire() as conn, conn.transaction():
        await bank_locks.share_banks_for_writes(conn, (graph.bank_id for _, graph in batch))
        later = BatchWrites()
        applied = await apply_events(conn, [graph for _, graph in batch], later)
        for (event, graph), written in zip(batch, applied, strict=True):
            if written:
                later.advance(
                    (graph.bank_id, event.message.topic, event.message.partition), event.message.offset
                )
        await later.flush(conn)
