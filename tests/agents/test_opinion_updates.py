"""Opinion updates against the real database: bounded moves, applied once, history kept."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import asyncpg
import pytest

from tempr.agents.materialize_graph import apply_event
from tempr.agents.reinforce_opinions import CONFIDENCE_STEP
from tempr.schemas.events import ExtractedFact, OpinionUpdate
from tempr.schemas.ids import stable_id
from tempr.store import memories, opinions


async def _opinion(db: asyncpg.Pool, bank: str, confidence: float) -> uuid.UUID:
    oid = stable_id(bank, "opinion", "cats are better than dogs")
    fact = ExtractedFact(
        fact_id=oid,
        text="I think cats are better than dogs.",
        fact_type="opinion",
        confidence=confidence,
        mentioned_at=datetime.now(UTC),
        embedding=[0.1] * 384,
    )
    async with db.acquire() as conn:
        await memories.upsert_fact(conn, bank, None, fact)
    return oid


def _update(bank: str, oid: uuid.UUID, verdict: str, evidence: str, **kw: object) -> OpinionUpdate:
    return OpinionUpdate(
        update_id=stable_id(bank, "opinion-update", oid, evidence),
        bank_id=bank,
        opinion_id=oid,
        verdict=verdict,  # type: ignore[arg-type]
        confidence_delta=CONFIDENCE_STEP.get(verdict, 0.0),
        evidence_ids=[stable_id(bank, "fact", evidence)],
        evidence_message_ids=[evidence],
        **kw,  # type: ignore[arg-type]
    )


async def _apply(db: asyncpg.Pool, update: OpinionUpdate) -> None:
    async with db.acquire() as conn, conn.transaction():
        assert await apply_event(conn, update)


async def test_redelivered_update_moves_confidence_once(db: asyncpg.Pool, bank: str) -> None:
    oid = await _opinion(db, bank, 0.7)
    update = _update(bank, oid, "reinforce", "m1")
    await _apply(db, update)
    await _apply(db, update)
    row = await opinions.get_opinion(db, bank, oid)
    assert row is not None and row["confidence"] == pytest.approx(0.8)
    assert list(row["source_message_ids"]) == ["m1"]
    assert len(await opinions.opinion_history(db, oid)) == 1
    assert await opinions.applied_updates(db, [update.update_id]) == {update.update_id}


async def test_moves_are_bounded_and_clamped(db: asyncpg.Pool, bank: str) -> None:
    oid = await _opinion(db, bank, 0.95)
    await _apply(db, _update(bank, oid, "reinforce", "a"))
    assert (await opinions.get_opinion(db, bank, oid))["confidence"] == pytest.approx(1.0)  # type: ignore[index]
    for evidence in ("b", "c", "d", "e", "f", "g", "h"):
        await _apply(db, _update(bank, oid, "weaken", evidence))
    assert (await opinions.get_opinion(db, bank, oid))["confidence"] == pytest.approx(0.0)  # type: ignore[index]
    history = await opinions.opinion_history(db, oid)
    assert [round(h["new_confidence"], 2) for h in history] == [1.0, 0.85, 0.7, 0.55, 0.4, 0.25, 0.1, 0.0]


async def test_contradiction_revises_text_and_reformation_does_not_undo_it(
    db: asyncpg.Pool, bank: str
) -> None:
    oid = await _opinion(db, bank, 0.8)
    await _apply(
        db,
        _update(
            bank,
            oid,
            "contradict",
            "x",
            revised_text="I now think dogs are better.",
            revised_confidence=0.4,
            revised_embedding=[0.2] * 384,
        ),
    )
    await _opinion(db, bank, 0.8)  # the formation event redelivered
    row = await opinions.get_opinion(db, bank, oid)
    assert row is not None
    assert (row["text"], round(row["confidence"], 2)) == ("I now think dogs are better.", 0.4)
    [change] = await opinions.opinion_history(db, oid)
    assert (change["previous_text"], change["new_text"]) == (
        "I think cats are better than dogs.",
        row["text"],
    )


async def test_update_for_a_missing_opinion_is_a_no_op(db: asyncpg.Pool, bank: str) -> None:
    update = _update(bank, uuid.uuid4(), "reinforce", "m")
    async with db.acquire() as conn, conn.transaction():
        assert not await opinions.apply_opinion_update(conn, update)
    assert await opinions.applied_updates(db, [update.update_id]) == set()
