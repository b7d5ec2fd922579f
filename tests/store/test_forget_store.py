"""`store.forget` on the real database: what rests on a forgotten fact, in one transaction."""

from __future__ import annotations

import uuid

import asyncpg
import pytest

from tempr.store import bank_locks, forget
from tests.recall.bankkit import Unit, insert_entity, insert_units

pytestmark = pytest.mark.integration


async def test_forgetting_a_fact_updates_what_rests_on_it(db: asyncpg.Pool, bank: str) -> None:
    fact, other = Unit("Dana keeps bees on her roof in Porto."), Unit("Dana sells honey at the market.")
    observation, opinion = (
        Unit("Dana is a beekeeper.", "observation"),
        Unit("I admire Dana's patience.", "opinion"),
    )
    await insert_units(db, bank, [fact, other, observation, opinion])
    await db.execute(
        "UPDATE memory_units SET evidence_ids = $2 WHERE id = ANY($1::uuid[])",
        [observation.id, opinion.id],
        [fact.id, other.id],
    )
    dana = await insert_entity(db, bank, "Dana", [fact.id, other.id, observation.id])
    porto = await insert_entity(db, bank, "Porto", [fact.id])

    async with db.acquire() as conn, conn.transaction():
        await bank_locks.lock_bank_for_rewrite(conn, bank)
        done = await forget.forget_fact(conn, bank, fact.id)
    assert done is not None
    assert (done.facts, done.observations, done.opinions_updated, done.entities) == (1, 1, 1, 1)

    left = {
        r["id"]: r
        for r in await db.fetch("SELECT id, text, evidence_ids FROM memory_units WHERE bank_id = $1", bank)
    }
    assert set(left) == {other.id, opinion.id}, "the fact and the observation resting on it go"
    assert left[opinion.id]["text"] == opinion.text and left[opinion.id]["evidence_ids"] == [other.id]
    assert await db.fetchval("SELECT mention_count FROM entities WHERE id = $1", dana) == 1
    assert await db.fetchval("SELECT count(*) FROM entities WHERE id = $1", porto) == 0
    assert await forget.forgotten_facts_among(db, bank, [fact.id, other.id]) == {fact.id}

    async with db.acquire() as conn, conn.transaction():
        assert await forget.forget_fact(conn, bank, uuid.uuid4()) is None
        again = await forget.forget_fact(conn, bank, fact.id)  # a retry: done, nothing more
    assert again is not None and again.facts == 0
