"""Passage context: a candidate's relevance blended with the best of the turns around it."""

from __future__ import annotations

import json
import uuid

import asyncpg
import pytest

from tempr.recall_api.recall.config import PRESETS, RecallConfig
from tempr.recall_api.recall.passages import passage_relevance
from tempr.store.turn_order import nearby_turns


def _blend(
    items: list[tuple[str, list[str]]], rel: list[float], nearby: dict[str, list[str]], w: float
) -> list[float]:
    return [round(x, 6) for x in passage_relevance(items, rel, lambda item: item[1], nearby, w)]


def test_a_reply_next_to_a_relevant_turn_gains_and_the_best_keeps_its_score() -> None:
    items = [("class", ["c1:1"]), ("reply", ["c1:2"]), ("far", ["c1:9"])]
    nearby = {"c1:1": ["c1:2"], "c1:2": ["c1:1", "c1:3"], "c1:9": ["c1:8"]}
    assert _blend(items, [0.8, 0.4, 0.4], nearby, 0.5) == [0.8, 0.6, 0.4]


def test_the_reply_can_overtake_an_equally_scored_fact_amid_other_talk() -> None:
    items = [("amid other talk", ["a:5"]), ("reply", ["b:2"]), ("question", ["b:1"])]
    nearby = {"b:2": ["b:1"], "b:1": ["b:2"]}
    before = [0.5, 0.49, 0.7]
    after = _blend(items, before, nearby, 0.35)
    assert after[1] > after[0]
    assert after[2] == 0.7


def test_shared_sources_are_one_passage_without_the_journal() -> None:
    # An exchange and the fact of one of its turns: the same turn, so the same passage.
    items = [("exchange", ["t1", "t2"]), ("turn", ["t2"])]
    assert _blend(items, [0.9, 0.3], {}, 0.5) == [0.9, 0.6]


def test_no_sources_or_no_weight_change_nothing() -> None:
    items = [("opinion", []), ("fact", ["x"])]
    assert _blend(items, [0.2, 0.9], {}, 0.5) == [0.2, 0.9]
    assert _blend([("a", ["x"]), ("b", ["y"])], [0.9, 0.1], {"y": ["x"]}, 0.0) == [0.9, 0.1]


def test_the_preset_without_passages_turns_it_off() -> None:
    assert PRESETS["default"].passage_weight > 0
    assert PRESETS["no-passage"].passage_weight == 0
    with pytest.raises(ValueError):
        RecallConfig(passage_weight=1.0)


async def _journal(db: asyncpg.Pool, bank: str, rows: list[tuple[str, str | None]]) -> None:
    """Journal rows in this order (their seq), each (message id, conversation id)."""
    for message_id, conversation in rows:
        await db.execute(
            "INSERT INTO messages (id, bank_id, message_id, conversation_id, payload)"
            " VALUES ($1, $2, $3, $4, $5::jsonb)",
            uuid.uuid4(),
            bank,
            message_id,
            conversation,
            json.dumps({}),
        )


async def test_nearby_turns_follow_the_journal_within_the_conversation(db: asyncpg.Pool, bank: str) -> None:
    # Two conversations interleaved, as a chat platform streams them, and a document.
    await _journal(
        db,
        bank,
        [("a1", "A"), ("b1", "B"), ("a2", "A"), ("a3", "A"), ("b2", "B"), ("a4", "A"), ("doc", None)],
    )
    near = await nearby_turns(db, bank, ["a2", "b1", "doc", "unknown", "a2"], width=1)
    assert {k: sorted(v) for k, v in near.items()} == {"a2": ["a1", "a3"], "b1": ["b2"]}
    wide = await nearby_turns(db, bank, ["a4"], width=2)
    assert sorted(wide["a4"]) == ["a2", "a3"]
    assert await nearby_turns(db, bank, ["a2"], width=0) == {}
    assert await nearby_turns(db, f"{bank}-other", ["a2"], width=1) == {}
    # Recall asks by the facts it is fetching: the turns they cite.
    exchange, other_bank = uuid.uuid4(), uuid.uuid4()
    await db.executemany(
        "INSERT INTO memory_units (id, bank_id, text, fact_type, source_message_ids) VALUES ($1, $2, $3, 'world', $4)",
        [
            (exchange, bank, "a reply to a question", ["a2", "a3"]),
            (other_bank, f"{bank}-x", "elsewhere", ["b1"]),
        ],
    )
    by_units = await nearby_turns(db, bank, width=1, unit_ids=[exchange, other_bank])
    assert {k: sorted(v) for k, v in by_units.items()} == {"a2": ["a1", "a3"], "a3": ["a2", "a4"]}
