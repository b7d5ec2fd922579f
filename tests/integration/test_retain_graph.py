"""Entities, links and documents through the live pipeline."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from tempr.agents.extraction.substance import carries_substance
from tempr.cli import app as cli_app
from tests.conftest import SHARED, wait_until

pytestmark = pytest.mark.integration


def _stats(api: httpx.Client, bank: str) -> dict:
    return api.get(f"/v1/banks/{bank}/stats").json()


def _settled(api: httpx.Client, bank: str) -> bool:
    s = _stats(api, bank)
    return s["messages"] > 0 and s["pending_events"] == 0


def _turns(conversation: str, speakers: tuple[str, str], texts: list[str]) -> list[dict]:
    return [
        {
            "content": t,
            "speaker": speakers[i % 2],
            "conversation_id": conversation,
            "message_id": f"{conversation}-{i}",
            "timestamp": f"2024-04-0{1 + i // 6}T10:{i % 60:02d}:00Z",
        }
        for i, t in enumerate(texts)
    ]


_TEXTS = [
    "I just got back from hiking near Lake Tahoe with my sister Nora.",
    "That sounds amazing! Did Nora enjoy it?",
    "She loved it. Nora wants to go back to Lake Tahoe in the summer.",
    "I started learning the violin last week, it is hard!",
    "You should ask Nora, she played the violin for years.",
    "Good idea, I'll call Nora tomorrow about the violin.",
    "My dog Biscuit ate my violin bow yesterday.",
    "Oh no, poor Biscuit! Is he okay?",
]


def test_entities_are_resolved_once_and_linked(api: httpx.Client, bank: str) -> None:
    r = api.post(f"/v1/banks/{bank}/memories", json={"items": _turns("c1", ("Ava", "Ben"), _TEXTS)})
    assert r.status_code == 202
    wait_until(lambda: _settled(api, bank), timeout=90)
    entities = api.get(f"/v1/banks/{bank}/entities", params={"limit": 100}).json()["items"]
    names = [e["canonical_name"] for e in entities]
    assert len(names) == len({n.lower() for n in names}), names
    by_name = {e["canonical_name"]: e for e in entities}
    assert by_name["Nora"]["mention_count"] >= 4
    assert by_name["Ava"]["kind"] == "person" and by_name["Ben"]["kind"] == "person"
    detail = api.get(f"/v1/banks/{bank}/entities/{by_name['Nora']['id']}").json()
    assert len(detail["facts"]) == by_name["Nora"]["mention_count"]
    assert all("Nora" in f["text"] for f in detail["facts"])
    links = _stats(api, bank)["links_by_type"]
    assert links.get("temporal", 0) > 0 and links.get("entity", 0) > 0
    assert api.get(f"/v1/banks/{bank}/entities/00000000-0000-0000-0000-000000000000").status_code == 404


def test_concurrent_ingests_into_one_bank_create_no_duplicate_entities(api: httpx.Client, bank: str) -> None:
    def send(conversation: str) -> None:
        with httpx.Client(base_url=str(api.base_url), timeout=30) as client:
            for turn in _turns(conversation, ("Ava", "Ben"), _TEXTS):
                client.post(f"/v1/banks/{bank}/memories", json={"items": [turn]})

    threads = [threading.Thread(target=send, args=(f"conv-{i}",)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wait_until(lambda: _stats(api, bank)["messages"] == 3 * len(_TEXTS) and _settled(api, bank), timeout=120)
    entities = api.get(f"/v1/banks/{bank}/entities", params={"limit": 200}).json()["items"]
    lowered = [e["canonical_name"].lower() for e in entities]
    assert len(lowered) == len(set(lowered)), sorted(lowered)
    # The three conversations say the same things at the same times: near-duplicates are
    # stored once with the union of their provenance, so every message is still covered.
    facts = api.get(f"/v1/banks/{bank}/memories", params={"limit": 1000}).json()["items"]
    covered = {m for f in facts for m in f["source_message_ids"]}
    assert covered == {f"conv-{i}-{j}" for i in range(3) for j in range(len(_TEXTS))}
    assert len(facts) < 3 * len(_TEXTS)


def test_document_reupload_same_content_is_a_no_op_and_changed_content_replaces(
    api: httpx.Client, bank: str
) -> None:
    v1 = {
        "items": [
            {"content": "The office moves to Porto in March 2025.", "document_id": "memo"},
            {"content": "Everyone gets a new laptop.", "document_id": "memo"},
        ]
    }
    assert api.post(f"/v1/banks/{bank}/memories", json=v1).json()["accepted"] == 2
    wait_until(lambda: _settled(api, bank) and _stats(api, bank)["facts"] == 2, timeout=60)
    again = api.post(f"/v1/banks/{bank}/memories", json=v1).json()
    assert again["accepted"] == 0 and again["unchanged_documents"] == ["memo"]

    v2 = {"items": [{"content": "The office moves to Braga in April 2025.", "document_id": "memo"}]}
    assert api.post(f"/v1/banks/{bank}/memories", json=v2).json()["accepted"] == 1
    wait_until(lambda: _settled(api, bank) and _stats(api, bank)["facts"] == 1, timeout=60)
    texts = [m["text"] for m in api.get(f"/v1/banks/{bank}/memories").json()["items"]]
    assert len(texts) == 1 and "Braga" in texts[0]
    docs = api.get(f"/v1/banks/{bank}/documents").json()
    assert docs["total"] == 1 and docs["items"][0]["facts"] == 1

    deleted = api.delete(f"/v1/banks/{bank}/documents/memo").json()
    assert deleted["facts_removed"] == 1
    assert _stats(api, bank)["facts"] == 0
    assert api.delete(f"/v1/banks/{bank}/documents/memo").status_code == 404


def test_ingest_cli_sends_a_conversation_file_and_waits(api: httpx.Client, bank: str, tmp_path: Path) -> None:
    path = tmp_path / "talk.json"
    path.write_text(
        json.dumps([{"conversation_id": "cli", "messages": _turns("cli", ("Ava", "Ben"), _TEXTS[:4])}])
    )
    result = CliRunner().invoke(
        cli_app, ["ingest", str(path), "--bank", bank, "--url", str(api.base_url), "--wait"]
    )
    assert result.exit_code == 0, result.output
    assert "4 messages from 1 conversations" in result.output
    # One fact per reply (turn + the turn it answers), and one per turn with substance of its
    # own: "That sounds amazing! Did Nora enjoy it?" has none.
    with_substance = [t for t in _TEXTS[:4] if carries_substance(t, ("Ava", "Ben"))]
    assert len(with_substance) == 3
    assert _stats(api, bank)["facts"] == 3 + 3


@pytest.mark.skipif(
    not (SHARED / "data" / "locomo" / "conv-30.json").exists(), reason="shared LoCoMo data absent"
)
def test_locomo_conversation_keeps_dia_ids_and_one_entity_per_speaker(api: httpx.Client, bank: str) -> None:
    path = SHARED / "data" / "locomo" / "conv-30.json"
    result = CliRunner().invoke(
        cli_app,
        ["ingest", str(path), "--bank", bank, "--url", str(api.base_url), "--wait", "--timeout", "400"],
    )
    assert result.exit_code == 0, result.output
    sample = json.loads(path.read_text())
    turns = [
        t["dia_id"] for k, v in sample.items() if k.startswith("session_") and isinstance(v, list) for t in v
    ]
    facts = api.get(f"/v1/banks/{bank}/memories", params={"limit": 1000}).json()["items"]
    covered = {m for f in facts for m in f["source_message_ids"]}
    assert all(f["source_message_ids"] for f in facts)
    assert covered == set(turns)
    entities = api.get(f"/v1/banks/{bank}/entities", params={"limit": 1000}).json()["items"]
    for speaker in (sample["speaker_a"], sample["speaker_b"]):
        assert sum(1 for e in entities if e["canonical_name"].lower() == speaker.lower()) == 1


def test_a_long_document_is_split_into_parts_that_all_cite_it(api: httpx.Client, bank: str) -> None:
    sentence = "The handbook says remote staff visit the Lisbon office every second month. "
    text = (sentence * 70).strip()  # ~5,300 characters: longer than one chunk (4,000)
    r = api.post(
        f"/v1/banks/{bank}/memories",
        json={"items": [{"content": text, "document_id": "handbook", "message_id": "hb-1"}]},
    )
    assert r.status_code == 202
    wait_until(lambda: _settled(api, bank), timeout=60)
    facts = api.get(f"/v1/banks/{bank}/memories", params={"limit": 1000}).json()["items"]
    assert {f["metadata"]["part"] for f in facts} == {0, 1}
    assert all(f["source_message_ids"] == ["hb-1"] and f["document_id"] == "handbook" for f in facts)
    # Near-duplicate sentences collapse, but each part keeps at least one fact of its own.
    assert len({f["id"] for f in facts}) == len(facts) >= 2
