"""Passage context: a candidate's relevance blended with the best of the turns around it."""

from __future__ import annotations

import json
import uuid

import asyncpg
import pytest

from tempr.recall_api.recall.config import PRESETS, RecallConfig
from tempr.recall_api.recall.passages import passage_relevance, passage_relevance_of
from tempr.store.recall import bank_shape, fetch_units
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


async def test_hydration_reads_the_same_turns_in_its_own_statement(db: asyncpg.Pool, bank: str) -> None:
    """Recall reads the passages with the facts (one statement), and only in a bank that
    journaled a conversation: the same map as asking the journal on its own."""
    plain = f"{bank}-imported"
    await db.execute(
        "INSERT INTO memory_units (id, bank_id, text, fact_type, source_message_ids)"
        " VALUES ($1, $2, 'imported', 'world', $3)",
        uuid.uuid4(),
        plain,
        ["x1"],
    )
    await _journal(db, plain, [("x1", None)])  # journaled, but in no conversation
    assert not (await bank_shape(db, plain, min_share=0.25, min_mentions=3)).conversations

    await _journal(db, bank, [("a1", "A"), ("b1", "B"), ("a2", "A"), ("a3", "A"), ("a4", "A"), ("doc", None)])
    assert (await bank_shape(db, bank, min_share=0.25, min_mentions=3)).conversations
    units = [uuid.uuid4() for _ in range(4)]
    await db.executemany(
        "INSERT INTO memory_units (id, bank_id, text, fact_type, source_message_ids) VALUES ($1, $2, $3, 'world', $4)",
        [
            (units[0], bank, "an exchange", ["a2", "a3"]),
            (units[1], bank, "the same turn again", ["a3"]),
            (units[2], bank, "a document", ["doc"]),
            (units[3], bank, "no source", []),
        ],
    )
    async with db.acquire() as conn:
        rows = await fetch_units(conn, bank, units, passage_turns=1)
        without = await fetch_units(conn, bank, units)
    assert "nearby" not in without[0]
    by_id = {r["id"]: r for r in rows}
    assert by_id[units[2]]["nearby"] is None and by_id[units[3]]["nearby"] is None
    alone = await nearby_turns(db, bank, width=1, unit_ids=units)
    for unit, row in by_id.items():
        expected = [near for turn in row["source_message_ids"] for near in alone.get(turn, [])]
        assert sorted(row["nearby"] or []) == sorted(expected), unit
    assert sorted(by_id[units[0]]["nearby"]) == ["a1", "a2", "a3", "a4"]


def test_nearby_turns_per_item_blend_as_the_turn_map_does() -> None:
    items = [("class", ["c1:1"]), ("reply", ["c1:2"]), ("far", ["c1:9"]), ("both", ["c1:2", "c1:9"])]
    nearby = {"c1:1": ["c1:2"], "c1:2": ["c1:1", "c1:3"], "c1:9": ["c1:8"]}
    rel = [0.8, 0.4, 0.3, 0.1]
    per_item = [[n for t in item[1] for n in nearby.get(t, [])] or None for item in items]
    expected = _blend(items, rel, nearby, 0.5)
    assert expected == [0.8, 0.6, 0.3, 0.45]
    got = passage_relevance_of(items, rel, lambda item: item[1], per_item, 0.5)
    assert [round(x, 6) for x in got] == expected
