"""`POST /v1/banks/{b}/replay`: a bank's facts rebuilt from its journaled messages.

Unchanged pipeline → exactly the same facts; changed configuration → the facts it now makes.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from tempr.streams.runtime import Supervisor
from tests.conftest import make_settings, running_stack, wait_until

pytestmark = pytest.mark.integration


def conversation(conversation_id: str, turns: list[tuple[str, str]], day: int = 1) -> list[dict[str, Any]]:
    return [
        {
            "content": text,
            "speaker": speaker,
            "conversation_id": conversation_id,
            "message_id": f"{conversation_id}-{i}",
            "timestamp": f"2024-04-{day:02d}T09:{i:02d}:00Z",
        }
        for i, (speaker, text) in enumerate(turns)
    ]


HIKE = [
    ("Ines", "I hiked the Rota Vicentina trail with my sister Rosa last weekend."),
    ("Omar", "That sounds amazing, how long was the hike?"),
    ("Ines", "Four days, and Rosa sprained her ankle on the second day."),
    ("Omar", "Oh no, I hope Rosa is feeling better now."),
]
GARDEN = [
    ("Omar", "My tomatoes finally turned red in the greenhouse."),
    ("Ines", "Will you make the gazpacho you promised?"),
]


def retain(api: httpx.Client, bank: str, items: list[dict[str, Any]]) -> str:
    r = api.post(f"/v1/banks/{bank}/memories", json={"items": items})
    assert r.status_code == 202, r.text
    return r.json()["consistency"]["token"]


def settled(api: httpx.Client, bank: str, *, timeout: float = 120) -> None:
    wait_until(lambda: api.get(f"/v1/banks/{bank}/stats").json()["pending_events"] == 0, timeout=timeout)


def facts(api: httpx.Client, bank: str) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    while True:  # every page: a whole LoCoMo conversation holds more facts than one page
        params = {"limit": 1000, "offset": len(found)}
        items = api.get(f"/v1/banks/{bank}/memories", params=params).json()["items"]
        found.update((f["id"], f) for f in items)
        if len(items) < 1000:
            return found


def shape(found: dict[str, dict[str, Any]]) -> dict[str, tuple[str, str, list[str]]]:
    return {i: (f["text"], f["fact_type"], sorted(f["source_message_ids"])) for i, f in found.items()}


def entities(api: httpx.Client, bank: str) -> dict[str, tuple[str, int]]:
    items = api.get(f"/v1/banks/{bank}/entities", params={"limit": 1000}).json()["items"]
    return {e["id"]: (e["canonical_name"], e["mention_count"]) for e in items}


def test_replay_on_an_unchanged_pipeline_rebuilds_the_same_facts(api: httpx.Client, bank: str) -> None:
    note = {"content": "Ines keeps her hiking boots in the blue cupboard.", "document_id": "notes-1"}
    retain(api, bank, [*conversation("hike", HIKE), note])
    settled(api, bank)
    before, entities_before = facts(api, bank), entities(api, bank)
    assert len(before) >= 5 and any(len(f["source_message_ids"]) == 2 for f in before.values())

    r = api.post(f"/v1/banks/{bank}/replay")
    assert r.status_code == 202, r.text
    out = r.json()
    assert out["messages_replayed"] == 5 and out["facts_removed"] == len(before)
    assert out["entities_removed"] == len(entities_before) and out["chunks_removed"] >= 2

    # The token waits for the rebuild, like a retain's.
    waited = api.post(
        f"/v1/banks/{bank}/recall",
        json={"query": "Who sprained an ankle?", "after": out["consistency"]["token"]},
    )
    assert waited.status_code == 200, waited.text
    assert any("sprained" in f["text"] for f in waited.json()["results"])
    settled(api, bank)
    after = facts(api, bank)
    assert shape(after) == shape(before)
    assert all(after[i]["created_at"] > before[i]["created_at"] for i in before)  # really rebuilt
    assert entities(api, bank) == entities_before


def test_replay_from_a_time_rebuilds_only_what_came_later(api: httpx.Client, bank: str) -> None:
    retain(api, bank, conversation("hike", HIKE))
    settled(api, bank)
    time.sleep(0.05)
    boundary = datetime.now(UTC)
    retain(api, bank, conversation("garden", GARDEN, day=3))
    settled(api, bank)
    before = facts(api, bank)

    r = api.post(f"/v1/banks/{bank}/replay", json={"from": boundary.isoformat()})
    assert r.status_code == 202, r.text
    assert r.json()["messages_replayed"] == len(GARDEN)
    garden = {i for i, f in before.items() if f["conversation_id"] == "garden"}
    assert r.json()["facts_removed"] == len(garden)
    settled(api, bank)
    after = facts(api, bank)
    assert shape(after) == shape(before)
    rebuilt = {i for i in after if after[i]["created_at"] != before[i]["created_at"]}
    assert rebuilt == garden


def test_replay_of_an_unknown_bank_is_404_and_a_bad_time_422(api: httpx.Client, bank: str) -> None:
    r = api.post(f"/v1/banks/{bank}/replay")
    assert r.status_code == 404 and bank in r.json()["detail"]
    retain(api, bank, [{"content": "Ines owns a red kayak."}])
    assert api.post(f"/v1/banks/{bank}/replay", json={"from": "last week"}).status_code == 422
    assert api.post(f"/v1/banks/{bank}/replay", json={"from": "2024-01-01T00:00:00"}).status_code == 422


def test_replay_after_a_chunking_change_rebuilds_the_same_facts(tmp_path: Path) -> None:
    # Facts depend on each turn and the turns before it, never on how turns were chunked: a
    # chunk of one turn still pairs a reply with the turn it answers (read from the journal).
    bank = "replay-config"
    with running_stack(make_settings(tmp_path)) as stack, _api(stack) as api:
        retain(api, bank, conversation("hike", HIKE))
        settled(api, bank)
        before = facts(api, bank)
    exchanges = {i for i, f in before.items() if f["metadata"].get("unit") == "exchange"}
    assert exchanges

    # Restarted on the same data with the new setting (and an empty broker log, so no
    # record the old worker left uncommitted comes back with the old chunking).
    with running_stack(make_settings(tmp_path, chunk_max_turns=1)) as stack, _api(stack) as api:
        r = api.post(f"/v1/banks/{bank}/replay")
        assert r.status_code == 202, r.text
        assert r.json()["messages_replayed"] == len(HIKE) and r.json()["facts_removed"] == len(before)
        settled(api, bank)
        after = facts(api, bank)

    assert shape(after) == shape(before)
    assert {f["chunk_id"] for f in after.values()} != {f["chunk_id"] for f in before.values()}


def _api(stack: Supervisor) -> httpx.Client:
    return httpx.Client(base_url=f"http://{stack.settings.host}:{stack.settings.port}", timeout=30)
