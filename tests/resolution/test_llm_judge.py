"""Borderline entity merges: the rule's answer, or an LLM's through the real client."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from tempr.agents.resolution.entities import KnownEntity, entity_id_for
from tempr.agents.resolution.graph_update import borderline_merges, resolve_facts
from tempr.agents.resolution.llm_judge import judge_borderline, pair_key
from tempr.inference.llm import LLMClient, RetryPolicy
from tempr.schemas.events import EntityMention, ExtractedFact, FactsEvent
from tempr.settings import Settings
from tests.llm_server import ScriptedLLMServer, reply_json, status

BANK = "judge-bank"
WHEN = datetime(2024, 5, 1, tzinfo=UTC)


def _event(*names: str) -> FactsEvent:
    facts = [
        ExtractedFact(
            fact_id=uuid.uuid4(),
            text=f"{name} went to the market.",
            mentioned_at=WHEN,
            entities=[EntityMention(name=name, kind="person")],
            source_message_ids=[f"m{i}"],
        )
        for i, name in enumerate(names)
    ]
    return FactsEvent(bank_id=BANK, chunk_id=uuid.uuid4(), message_event_ids=[uuid.uuid4()], facts=facts)


def _known() -> dict[uuid.UUID, KnownEntity]:
    melanie = KnownEntity(entity_id_for(BANK, "Melanie", "person"), "Melanie", "person", mention_count=12)
    return {melanie.entity_id: melanie}


def test_without_a_judge_the_rule_merges_a_nickname() -> None:
    known = _known()
    resolved = resolve_facts(_event("Mel"), known)
    assert set(resolved.entities) == set(_known())


def test_a_rejected_borderline_merge_becomes_its_own_entity() -> None:
    known = _known()
    pairs = borderline_merges(_event("Mel"), known)
    assert [(r.surface, c.canonical_name) for r, c, _ in pairs] == [("Mel", "Melanie")]
    assert set(known) == set(_known())  # asking changed nothing

    resolved = resolve_facts(_event("Mel"), known, decide=lambda *_: False)
    (entity,) = resolved.entities.values()
    assert entity.canonical_name == "Mel"
    assert entity.entity_id == entity_id_for(BANK, "Mel", "person")
    assert len(known) == 2


def _judge(body: dict[str, Any]) -> Any:
    user = body["messages"][-1]["content"]
    if '"mention": "Mel"' in user:
        return reply_json({"same": False, "reason": "Mel could be someone else"})
    if '"mention": "Sarah"' in user:
        return status(500, "scripted outage")
    return reply_json({"same": True, "reason": "same person"})


async def test_the_llm_decides_each_distinct_pair_once() -> None:
    sara = KnownEntity(entity_id_for(BANK, "Sara", "person"), "Sara", "person", mention_count=3)
    known = {**_known(), sara.entity_id: sara}
    event = _event("Mel", "Mel", "Sarah")
    pairs = borderline_merges(event, known)
    assert {(r.surface, c.canonical_name) for r, c, _ in pairs} == {("Mel", "Melanie"), ("Sarah", "Sara")}
    with ScriptedLLMServer(default=_judge) as server:
        settings = Settings(llm_base_url=server.base_url, llm_model="judge", llm_max_retries=0)
        async with LLMClient(settings, retry=RetryPolicy(max_retries=0, base_delay_s=0.01)) as client:
            decisions = await judge_borderline(client, pairs)
        asked = [r for r in server.requests if "entity index" in r["messages"][0]["content"]]
    assert len(asked) == 2  # "Mel" twice is one question
    mel = next(p for p in pairs if p[0].surface == "Mel")
    assert decisions == {pair_key(mel[0], mel[1]): False}  # Sarah's call failed: no decision
    resolved = resolve_facts(event, known, decide=lambda r, c, _f: decisions.get(pair_key(r, c), True))
    names = sorted(e.canonical_name for e in resolved.entities.values())
    assert names == ["Mel", "Sara"]
