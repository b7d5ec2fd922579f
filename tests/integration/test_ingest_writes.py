"""The ingest side's set-based reads and writes on the real Postgres: links in one statement,
the resolver's neighbour queries for a whole batch, entities written at the end of the
materializer's batch; each idempotent."""

from __future__ import annotations

import asyncio
import uuid
from collections import defaultdict, deque
from datetime import UTC, datetime, timedelta

import asyncpg
import numpy as np
import pytest

from tempr.agents.materialize_graph import (
    BatchWrites,
    ChunkNearDuplicates,
    apply_event,
    apply_events,
    same_statement_stored,
)
from tempr.agents.resolve_entities import resolve_bank_batch, resolve_batches
from tempr.schemas.events import (
    EntityMention,
    ExtractedFact,
    FactsEvent,
    GraphEvent,
    MemoryLink,
    MessageEvent,
    MessagePart,
    ResolvedEntity,
    UnitEntity,
)
from tempr.store import (
    banks,
    forget,
    graph_context,
    links,
    memories,
    messages,
    replay,
    vector_indexes,
    watermarks,
)

pytestmark = pytest.mark.integration

DIM = 384
T0 = datetime(2024, 5, 1, tzinfo=UTC)


def _unit(v: np.ndarray) -> list[float]:
    return (v / np.linalg.norm(v)).astype(np.float32).tolist()


def _fact(text: str, embedding: list[float] | None = None, minutes: int = 0) -> ExtractedFact:
    return ExtractedFact(
        fact_id=uuid.uuid4(), text=text, mentioned_at=T0 + timedelta(minutes=minutes), embedding=embedding
    )


async def _store(db: asyncpg.Pool, bank: str, facts: list[ExtractedFact]) -> None:
    async with db.acquire() as conn:
        for fact in facts:
            await memories.upsert_fact(conn, bank, None, fact)


async def test_links_are_one_statement_that_drops_missing_ends_and_only_raises_weights(
    db: asyncpg.Pool, bank: str
) -> None:
    a, b, c = (_fact(t) for t in ("Ann sings.", "Ben drums.", "Cy plays bass."))
    await _store(db, bank, [a, b, c])
    ab, bc = (a.fact_id, b.fact_id), (b.fact_id, c.fact_id)
    batch = [
        MemoryLink(from_id=ab[0], to_id=ab[1], link_type="semantic", weight=0.8),
        MemoryLink(from_id=ab[0], to_id=ab[1], link_type="semantic", weight=0.9),  # same row twice
        MemoryLink(from_id=bc[0], to_id=bc[1], link_type="temporal", weight=0.5),
        MemoryLink(from_id=a.fact_id, to_id=uuid.uuid4(), link_type="entity", weight=0.7),  # not stored
        MemoryLink(from_id=a.fact_id, to_id=a.fact_id, link_type="entity", weight=0.7),  # itself
    ]
    async with db.acquire() as conn:
        await links.upsert_links(conn, bank, batch)
        query = (
            "SELECT from_id, to_id, link_type, weight, xmin::text AS v FROM memory_links WHERE bank_id = $1"
        )
        rows = {(r["from_id"], r["to_id"], r["link_type"]): r for r in await conn.fetch(query, bank)}
        assert {k: pytest.approx(r["weight"]) for k, r in rows.items()} == {
            (*ab, "semantic"): 0.9,
            (*bc, "temporal"): 0.5,
        }
        # Redelivered, or linked again lighter: nothing is written. Heavier: the weight rises.
        await links.upsert_links(conn, bank, [*batch, batch[0]])
        await links.upsert_links(
            conn, bank, [MemoryLink(from_id=bc[0], to_id=bc[1], link_type="temporal", weight=0.6)]
        )
        again = {(r["from_id"], r["to_id"], r["link_type"]): r for r in await conn.fetch(query, bank)}
    assert again[(*ab, "semantic")]["v"] == rows[(*ab, "semantic")]["v"]
    assert again[(*bc, "temporal")]["weight"] == pytest.approx(0.6)


async def test_semantic_neighbours_of_a_batch_are_the_exact_nearest_of_each_fact_in_its_bank(
    db: asyncpg.Pool, bank: str
) -> None:
    rng = np.random.default_rng(7)
    centres = rng.normal(size=(3, DIM))
    facts = [
        _fact(f"fact {i}", _unit(centres[i % 3] + rng.normal(scale=0.04, size=DIM) * np.sqrt(DIM) / 6))
        for i in range(60)
    ]
    await _store(db, bank, facts)
    # Another bank with the very same vectors: never a neighbour.
    await _store(db, f"{bank}-other", [_fact(f.text, f.embedding) for f in facts])
    queries = [_unit(centres[i % 3] + rng.normal(scale=0.05, size=DIM)) for i in range(5)]
    matrix = np.asarray([f.embedding for f in facts])

    async def check() -> None:
        rows = await graph_context.semantic_neighbours_of_many(db, bank, queries, min_cosine=0.7, limit=10)
        got: list[set[uuid.UUID]] = [set() for _ in queries]
        for row in rows:
            for q in row["queries"]:
                got[q].add(row["id"])
        for q, vector in enumerate(queries):
            cosine = matrix @ np.asarray(vector)
            order = [i for i in np.argsort(-cosine) if cosine[i] >= 0.7][:10]
            assert len(order) == 10
            assert got[q] == {facts[i].fact_id for i in order}
        assert {r["id"] for r in rows} <= {f.fact_id for f in facts}

    await check()  # scanned exactly
    async with db.acquire() as conn:
        await vector_indexes.build_bank_index(conn, bank, len(facts))
        try:
            await check()  # through the bank's own index (exact at this size)
        finally:
            await vector_indexes.drop_bank_index(conn, bank)


async def test_entity_neighbours_of_a_batch_say_which_entities_reached_them(
    db: asyncpg.Pool, bank: str
) -> None:
    facts = [_fact(f"fact {i}", minutes=i) for i in range(6)]
    await _store(db, bank, facts)
    ann, ben = uuid.uuid4(), uuid.uuid4()
    event = GraphEvent(
        bank_id=bank,
        chunk_id=uuid.uuid4(),
        message_event_ids=[],
        entities=[ResolvedEntity(entity_id=e, canonical_name=n) for e, n in ((ann, "Ann"), (ben, "Ben"))],
        unit_entities=[
            *(UnitEntity(unit_id=f.fact_id, entity_id=ann) for f in facts),
            UnitEntity(unit_id=facts[0].fact_id, entity_id=ben),
        ],
    )
    async with db.acquire() as conn, conn.transaction():
        assert await apply_event(conn, event)
    rows = await graph_context.entity_neighbours_across(db, [bank], [ann, ben], per_entity=2)
    via = {r["id"]: set(r["via"]) for r in rows}
    # Ann's two latest facts, and Ben's only one.
    assert via == {facts[5].fact_id: {ann}, facts[4].fact_id: {ann}, facts[0].fact_id: {ben}}


async def test_a_batch_writes_entities_at_its_end_merged_and_a_redelivery_changes_nothing(
    db: asyncpg.Pool, bank: str
) -> None:
    one, two = _fact("Caroline paints."), _fact("Caro runs.", minutes=90)
    caroline = uuid.uuid4()

    def event(fact: ExtractedFact, alias: str, kind: str, seen: datetime, linked: bool) -> GraphEvent:
        return GraphEvent(
            bank_id=bank,
            chunk_id=uuid.uuid4(),
            message_event_ids=[],
            facts=[fact],
            entities=[
                ResolvedEntity(
                    entity_id=caroline,
                    canonical_name="Caroline",
                    kind=kind,
                    aliases=[alias],
                    first_seen=seen,
                    last_seen=seen,
                )
            ],
            unit_entities=[UnitEntity(unit_id=fact.fact_id, entity_id=caroline)],
            links=[MemoryLink(from_id=one.fact_id, to_id=two.fact_id, link_type="temporal", weight=0.9)]
            if linked
            else [],
        )

    batch = [
        event(one, "Caroline", "other", T0, linked=False),
        event(two, "Caro", "person", T0 + timedelta(hours=2), linked=True),
    ]

    async def materialize() -> tuple[asyncpg.Record, list[asyncpg.Record]]:
        async with db.acquire() as conn, conn.transaction():
            later = BatchWrites()
            for e in batch:
                assert await apply_event(conn, e, later)
            await later.flush(conn)
        entity = await db.fetchrow(
            "SELECT kind, aliases, mention_count, first_seen, last_seen, xmin::text AS v FROM entities WHERE id = $1",
            caroline,
        )
        stored = await db.fetch("SELECT from_id, to_id, weight FROM memory_links WHERE bank_id = $1", bank)
        return entity, stored

    entity, stored = await materialize()
    assert entity["kind"] == "person" and sorted(entity["aliases"]) == ["Caro", "Caroline"]
    assert entity["mention_count"] == 2
    assert (entity["first_seen"], entity["last_seen"]) == (T0, T0 + timedelta(hours=2))
    assert [(r["from_id"], r["to_id"]) for r in stored] == [(one.fact_id, two.fact_id)]
    entity_again, stored_again = await materialize()
    assert dict(entity_again) | {"v": None} == dict(entity) | {"v": None}
    assert stored_again == stored
    assert await db.fetchval("SELECT count(*) FROM memory_units WHERE bank_id = $1", bank) == 2


async def test_a_near_duplicate_hands_its_mentions_and_links_to_the_stored_fact(
    db: asyncpg.Pool, bank: str
) -> None:
    """The materializer copies a mention or link only when one of its facts was folded into a
    stored near-duplicate; every other one is written as the event carries it."""
    vector = _unit(np.random.default_rng(3).normal(size=DIM))
    kept, other = _fact("Caroline paints every Sunday.", vector), _fact("Ben drums.", minutes=5)
    await _store(db, bank, [kept, other])
    again = _fact("Caroline paints every Sunday!", vector, minutes=9)  # same statement, new id
    third = _fact("Cy plays bass.", minutes=7)
    ann, cy = uuid.uuid4(), uuid.uuid4()
    event = GraphEvent(
        bank_id=bank,
        chunk_id=uuid.uuid4(),
        message_event_ids=[],
        facts=[again, third],
        entities=[
            ResolvedEntity(entity_id=e, canonical_name=n, kind="person", first_seen=T0, last_seen=T0)
            for e, n in ((ann, "Caroline"), (cy, "Cy"))
        ],
        unit_entities=[
            UnitEntity(unit_id=again.fact_id, entity_id=ann),
            UnitEntity(unit_id=third.fact_id, entity_id=cy),
        ],
        links=[
            MemoryLink(from_id=again.fact_id, to_id=third.fact_id, link_type="semantic", weight=0.8),
            MemoryLink(from_id=other.fact_id, to_id=third.fact_id, link_type="temporal", weight=0.6),
        ],
    )
    async with db.acquire() as conn, conn.transaction():
        assert await apply_event(conn, event)
    units = {r["id"] for r in await db.fetch("SELECT id FROM memory_units WHERE bank_id = $1", bank)}
    assert units == {kept.fact_id, other.fact_id, third.fact_id}
    mentions = await db.fetch("SELECT unit_id, entity_id FROM unit_entities WHERE bank_id = $1", bank)
    assert {(r["unit_id"], r["entity_id"]) for r in mentions} == {(kept.fact_id, ann), (third.fact_id, cy)}
    stored = await db.fetch("SELECT from_id, to_id, link_type FROM memory_links WHERE bank_id = $1", bank)
    assert {(r["from_id"], r["to_id"], r["link_type"]) for r in stored} == {
        (kept.fact_id, third.fact_id, "semantic"),
        (other.fact_id, third.fact_id, "temporal"),
    }


def _journal_row(bank: str, n: int) -> MessageEvent:
    return MessageEvent(
        event_id=uuid.uuid4(), bank_id=bank, message_id=f"m{n}", content="A long handbook.", received_at=T0
    )


async def _processed(conn: asyncpg.Connection, event: MessageEvent) -> bool:
    return await conn.fetchval("SELECT processed_at IS NOT NULL FROM messages WHERE id = $1", event.event_id)


async def test_a_message_cut_in_parts_is_processed_with_its_last_part_in_any_order(
    db: asyncpg.Pool, bank: str
) -> None:
    long, short = _journal_row(bank, 1), _journal_row(bank, 2)
    part = [MessagePart(event_id=long.event_id, part=i, parts=3) for i in range(3)]
    async with db.acquire() as conn:
        await messages.journal_messages(conn, [long, short])
        # Part 2 lands first, beside a whole message; then part 2 again (a redelivery).
        assert await messages.mark_processed(conn, [long.event_id, short.event_id], [part[2]]) == 1
        assert await _processed(conn, short) and not await _processed(conn, long)
        assert await messages.mark_processed(conn, [long.event_id], [part[2]]) == 0
        assert await messages.mark_processed(conn, [long.event_id], [part[0]]) == 0
        assert not await _processed(conn, long)
        assert await messages.mark_processed(conn, [long.event_id], [part[1]]) == 1
        assert await _processed(conn, long)
        # A replay reopens the message: its parts count again from none.
        await replay.reopen_messages(conn, [long.event_id])
        assert await messages.mark_processed(conn, [long.event_id], part[:2]) == 0
        assert await messages.mark_processed(conn, [long.event_id], part[2:]) == 1


async def test_parts_landing_in_concurrent_transactions_both_count(db: asyncpg.Pool, bank: str) -> None:
    long = _journal_row(bank, 1)
    first, second = (MessagePart(event_id=long.event_id, part=i, parts=2) for i in range(2))
    async with db.acquire() as a, db.acquire() as b:
        await messages.journal_messages(a, [long])
        tx = a.transaction()
        await tx.start()
        await messages.mark_processed(a, [long.event_id], [first])
        # b waits on a's row lock, then must read a's part, not the snapshot it started from.
        waiting = asyncio.create_task(messages.mark_processed(b, [long.event_id], [second]))
        await asyncio.sleep(0.3)
        assert not waiting.done()
        await tx.commit()
        assert await waiting == 1
        assert await _processed(b, long)


def _near(v: np.ndarray, seed: int) -> list[float]:
    """A vector at cosine ~0.999 to `v`: a near-duplicate's embedding."""
    return _unit(v + 0.01 * np.random.default_rng(seed).normal(size=DIM))


async def test_a_chunks_near_duplicates_from_one_statement_are_the_per_fact_queries(
    db: asyncpg.Pool, bank: str
) -> None:
    """For a chunk of new facts the materializer asks for every fact's near-duplicate candidates
    at once, before storing any; the decisions equal those of one query per fact run as each
    fact is stored: stored facts, earlier facts of the chunk (but not one folded into another),
    the type, the time window and the text rule all count as before."""
    rng = np.random.default_rng(11)
    paint, run = rng.normal(size=DIM), rng.normal(size=DIM)
    stored = _fact("Caroline paints every Sunday.", _unit(paint))
    await _store(db, bank, [stored])
    chunk = [
        _fact("Caroline paints every Sunday!", _near(paint, 1), minutes=3),  # the stored one
        _fact("Melanie runs marathons.", _unit(run), minutes=4),  # new
        _fact("Melanie runs marathons!", _near(run, 2), minutes=5),  # the one before
        _fact("melanie RUNS marathons", _near(run, 3), minutes=6),  # fact 1, not the folded fact 2
        _fact("Melanie ran 3 marathons.", _near(run, 4), minutes=7),  # close vector, other statement
        _fact("Caroline paints every Sunday.", _near(paint, 5), minutes=60 * 24 * 3),  # days later
        _fact("Caroline paints every Sunday.", None, minutes=8),  # no embedding
    ]
    chunk.append(
        chunk[0].model_copy(update={"fact_id": uuid.uuid4(), "fact_type": "experience"})  # other type
    )
    async with db.acquire() as conn, conn.transaction():
        batched = await ChunkNearDuplicates.of(conn, bank, chunk)
        replaced: dict[uuid.UUID, uuid.UUID] = {}
        decisions = []
        for i, fact in enumerate(chunk):
            one_by_one = await same_statement_stored(conn, bank, fact)
            assert batched.stored_as(i, replaced) == one_by_one
            decisions.append(one_by_one)
            if one_by_one is None:
                await memories.upsert_fact(conn, bank, None, fact)
            else:
                replaced[fact.fact_id] = one_by_one
    ids = [f.fact_id for f in chunk]
    assert decisions == [stored.fact_id, None, ids[1], ids[1], None, None, None, None]
    # Through the materializer: the same chunk again under new ids folds as decided above.
    again = [f.model_copy(update={"fact_id": uuid.uuid4()}) for f in chunk]
    event = GraphEvent(bank_id=bank, chunk_id=uuid.uuid4(), message_event_ids=[], facts=again)
    async with db.acquire() as conn, conn.transaction():
        assert await apply_event(conn, event)
    count = await db.fetchval("SELECT count(*) FROM memory_units WHERE bank_id = $1", bank)
    # Each new fact folds into its stored twin, except the one without an embedding.
    assert count == 1 + 5 + 1


async def test_a_batch_of_many_banks_resolves_as_each_bank_alone_and_never_across_banks(
    db: asyncpg.Pool, bank: str
) -> None:
    """A live stream's resolver batch holds one event of each of many banks; reading their
    neighbours in one statement per kind must give each bank what it alone would get."""
    rng = np.random.default_rng(11)
    centre = rng.normal(size=DIM)
    banks = [f"{bank}-{i}" for i in range(3)]

    def near() -> list[float]:
        return _unit(centre + rng.normal(scale=0.02, size=DIM) * np.sqrt(DIM) / 6)

    # Every bank holds the same stored shape: facts about Ann near in time and meaning, so a
    # read that leaked across banks would link to another bank's facts.
    for name in banks:
        first = await resolve_bank_batch(db, [_facts_event(name, [near() for _ in range(4)], 0)], deque())
        async with db.acquire() as conn, conn.transaction():
            for update in first:
                assert await apply_event(conn, update)
    # The bank with an index of its own is read through it, the others exactly.
    async with db.acquire() as conn:
        await vector_indexes.build_bank_index(conn, banks[2], 4)
    try:
        events = {name: [_facts_event(name, [near(), near()], 30)] for name in banks}
        together = await resolve_batches(db, events, defaultdict(deque))
        for name in banks:
            alone = await resolve_bank_batch(db, events[name], deque())
            assert [u.model_dump() for u in together[name]] == [u.model_dump() for u in alone]
            stored = {r["id"] for r in await db.fetch("SELECT id FROM memory_units WHERE bank_id = $1", name)}
            new = {f.fact_id for f in events[name][0].facts}
            ends = {e for lk in together[name][0].links for e in (lk.from_id, lk.to_id)}
            assert ends - new, "no link to a stored fact: nothing was compared"
            assert ends <= stored | new
            kinds = {lk.link_type for lk in together[name][0].links}
            assert {"temporal", "semantic", "entity"} <= kinds
    finally:
        async with db.acquire() as conn:
            await vector_indexes.drop_bank_index(conn, banks[2])


def _facts_event(bank_id: str, embeddings: list[list[float]], minutes: int) -> FactsEvent:
    facts = [
        ExtractedFact(
            fact_id=uuid.uuid4(),
            text=f"Ann bought lamp number {minutes + i} in Porto.",
            mentioned_at=T0 + timedelta(minutes=minutes + i),
            embedding=embedding,
            entities=[EntityMention(name="Ann", kind="person"), EntityMention(name="Porto", kind="location")],
        )
        for i, embedding in enumerate(embeddings)
    ]
    return FactsEvent(bank_id=bank_id, chunk_id=uuid.uuid4(), message_event_ids=[], facts=facts)


async def test_a_batchs_checks_are_one_read_yet_each_event_is_judged_on_its_own_bank(
    db: asyncpg.Pool, bank: str
) -> None:
    """Deleted banks, forgotten messages and facts, and journal rows are read once for a whole
    batch; a forgotten message or a tombstone in one bank must not touch another bank's event."""
    live, gone, other = bank, f"{bank}-gone", f"{bank}-other"
    said, lost = _journal_row(live, 1), _journal_row(other, 1)
    kept, cites_forgotten = _fact("Ann sings."), _fact("Ann hums.", minutes=1)
    cites_forgotten.source_message_ids = ["m9"]
    kept.source_message_ids = ["m1"]
    late, forgotten_fact = _fact("Ben drums.", minutes=2), _fact("Ben naps.", minutes=3)
    late.source_message_ids = forgotten_fact.source_message_ids = ["m9"]  # m9 is forgotten in `live` only
    stale = _fact("Cy plays bass.")

    def event(bank_id: str, facts: list[ExtractedFact], journal: list[MessageEvent]) -> GraphEvent:
        return GraphEvent(
            bank_id=bank_id,
            chunk_id=uuid.uuid4(),
            message_event_ids=[m.event_id for m in journal],
            chunk_text=" ".join(f.text for f in facts),
            facts=facts,
        )

    batch = [
        event(live, [kept, cites_forgotten], [said]),
        event(gone, [stale], [_journal_row(gone, 1)]),  # its journal row went with the bank
        event(other, [late, forgotten_fact], [lost]),
    ]
    async with db.acquire() as conn, conn.transaction():
        await messages.journal_messages(conn, [said, lost])
        await conn.execute("INSERT INTO forgotten_messages (bank_id, message_id) VALUES ($1, 'm9')", live)
        await banks.ensure_banks(conn, [other])
        await forget.tombstone_facts(conn, other, [forgotten_fact.fact_id], reason="forgotten")
        await banks.record_tombstone(conn, gone, None)
    async with db.acquire() as conn, conn.transaction():
        later = BatchWrites()
        assert await apply_events(conn, batch, later) == [True, False, True]
        await later.flush(conn)
    stored = {
        r["bank_id"]: r["ids"]
        for r in await db.fetch(
            "SELECT bank_id, array_agg(id) AS ids FROM memory_units WHERE bank_id = ANY($1::text[]) GROUP BY 1",
            [live, gone, other],
        )
    }
    assert {b: set(ids) for b, ids in stored.items()} == {live: {kept.fact_id}, other: {late.fact_id}}
    assert await db.fetchval("SELECT count(*) FROM banks WHERE id = $1", gone) == 0
    async with db.acquire() as conn:
        assert await _processed(conn, said) and await _processed(conn, lost)


async def test_watermarks_of_a_batch_only_rise(db: asyncpg.Pool, bank: str) -> None:
    async with db.acquire() as conn:
        await watermarks.advance_watermarks(conn, {(bank, "g", 0): 7, (bank, "g", 1): 3})
        await watermarks.advance_watermarks(conn, {(bank, "g", 0): 5, (bank, "g", 1): 4})
        rows = await conn.fetch('SELECT partition, "offset" FROM watermarks WHERE bank_id = $1', bank)
    assert {r["partition"]: r["offset"] for r in rows} == {0: 7, 1: 4}
