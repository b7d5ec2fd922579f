"""Forget and correct against the live stack: nothing forgotten comes back through a resend,
a redelivery from Kafka or a replay; a correction goes through the pipeline and survives a replay."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from tempr.schemas.api import RetainItem
from tempr.schemas.events import encode_event
from tempr.schemas.retain import to_message_event
from tempr.streams.publisher import create_producer
from tempr.streams.runtime import Supervisor
from tempr.streams.topics import MESSAGES, message_key
from tests.conftest import wait_until
from tests.integration.test_bank_replay import conversation, facts, retain, settled

pytestmark = pytest.mark.integration

TRIP = [
    ("Ines", "I adopted a grey cat called Pixel from the shelter in Braga."),
    ("Omar", "Lovely! Does Pixel get along with your dog?"),
    ("Ines", "My dog Bolt ignores Pixel completely, which is a relief."),
    ("Omar", "I am training hard for the Lisbon marathon in October with my running club."),
]


def citing(found: dict[str, dict[str, Any]], message_id: str) -> list[str]:
    return [i for i, f in found.items() if message_id in f["source_message_ids"]]


def recall_texts(api: httpx.Client, bank: str, query: str, after: str | None = None) -> list[str]:
    body: dict[str, Any] = {"query": query, "budget": "low"}
    if after is not None:
        body["after"] = after
    r = api.post(f"/v1/banks/{bank}/recall", json=body)
    assert r.status_code == 200, r.text
    return [x["text"] for x in r.json()["results"]]


def produce_again(bootstrap: str, bank: str, item: dict[str, Any]) -> None:
    """The message straight to the topic, as a chat platform resending it (or Kafka redelivering it) would."""
    event = to_message_event(bank, RetainItem.model_validate(item), datetime.now(UTC))

    async def send() -> None:
        producer = create_producer(bootstrap)
        await producer.start()
        try:
            key = message_key(event.bank_id, event.conversation_id, event.document_id)
            await producer.send_and_wait(MESSAGES.name, value=encode_event(event), key=key)
        finally:
            await producer.stop()

    asyncio.run(send())


def test_a_forgotten_message_never_comes_back(api: httpx.Client, stack: Supervisor, bank: str) -> None:
    items = conversation("pets", TRIP)
    retain(api, bank, items)
    settled(api, bank)
    before = facts(api, bank)
    gone = citing(before, "pets-0")
    assert gone, "the first turn made facts"
    kept = [i for i in before if i not in gone]

    r = api.delete(f"/v1/banks/{bank}/messages/pets-0")
    assert r.status_code == 200, r.text
    out = r.json()
    assert out["facts_removed"] == len(gone) and out["messages_removed"] == 1
    assert out["messages_forgotten"] == ["pets-0"]
    token = out["consistency"]["token"]
    assert not any(
        "Braga" in t for t in recall_texts(api, bank, "Where did Ines adopt her cat?", after=token)
    )
    assert api.get(f"/v1/banks/{bank}/memories/{gone[0]}").status_code == 404
    settled(api, bank)  # the reply that cited it is rebuilt without it
    after = facts(api, bank)
    assert not citing(after, "pets-0")
    assert set(kept) - set(gone) <= set(after) | set(kept), "facts of other turns stay"
    assert all(i in after for i in kept if "pets-1" not in before[i]["source_message_ids"])

    # A resend over HTTP: 409 naming the tombstone.
    r = api.post(f"/v1/banks/{bank}/memories", json={"items": [items[0]]})
    assert r.status_code == 409, r.text
    assert "pets-0" in r.json()["detail"] and "forgotten" in r.json()["detail"]

    # The same message straight from Kafka: a dead letter with the reason, nothing stored.
    produce_again(stack.settings.bootstrap, bank, items[0])

    def lettered() -> bool:
        letters = api.get("/v1/dead-letters", params={"limit": 1000}).json()
        return any(bank in (d["key"] or "") and "was forgotten" in d["error"] for d in letters)

    wait_until(lettered, timeout=60)

    # A replay of the bank rebuilds from the journal, which no longer holds it.
    r = api.post(f"/v1/banks/{bank}/replay")
    assert r.status_code == 202, r.text
    settled(api, bank)
    rebuilt = facts(api, bank)
    assert not citing(rebuilt, "pets-0")
    assert not any("Braga" in f["text"] for f in rebuilt.values())
    assert set(rebuilt) == set(after)


def test_a_forgotten_fact_stays_forgotten_through_a_replay(api: httpx.Client, bank: str) -> None:
    retain(api, bank, conversation("run", TRIP))
    settled(api, bank)
    before = facts(api, bank)
    target = next(
        i for i, f in before.items() if "marathon" in f["text"] and len(f["source_message_ids"]) == 1
    )
    detail = api.get(f"/v1/banks/{bank}/memories/{target}").json()
    assert detail["chunk_text"] and "marathon" in detail["chunk_text"]
    assert {e["canonical_name"] for e in detail["entities"]} >= {"Lisbon"}

    r = api.delete(f"/v1/banks/{bank}/memories/{target}")
    assert r.status_code == 200, r.text
    assert r.json()["facts_removed"] == 1
    assert api.delete(f"/v1/banks/{bank}/memories/{target}").status_code == 200  # idempotent
    assert target not in facts(api, bank)

    assert api.post(f"/v1/banks/{bank}/replay").status_code == 202
    settled(api, bank)
    assert set(facts(api, bank)) == set(before) - {target}


def test_forgetting_a_conversation_removes_all_of_it(api: httpx.Client, bank: str) -> None:
    retain(api, bank, [*conversation("pets", TRIP[:2]), *conversation("other", TRIP[3:], day=2)])
    settled(api, bank)
    r = api.delete(f"/v1/banks/{bank}/conversations/pets")
    assert r.status_code == 200, r.text
    assert r.json()["messages_forgotten"] == ["pets-0", "pets-1"]
    left = facts(api, bank)
    assert left and all(f["conversation_id"] == "other" for f in left.values())
    assert api.delete(f"/v1/banks/{bank}/conversations/nothing-here").status_code == 404


def test_a_correction_goes_through_the_pipeline_and_survives_a_replay(api: httpx.Client, bank: str) -> None:
    retain(api, bank, conversation("run", TRIP))
    settled(api, bank)
    # The marathon turn's own fact (the exchange quoting it stays as it was).
    target = next(i for i, f in facts(api, bank).items() if f["source_message_ids"] == ["run-3"])
    old = api.get(f"/v1/banks/{bank}/memories/{target}").json()
    assert "Lisbon marathon" in old["text"]

    r = api.patch(
        f"/v1/banks/{bank}/memories/{target}",
        json={
            "text": "Omar is training for the Porto marathon in November.",
            "tags": ["sport"],
            "reason": "typo",
        },
    )
    assert r.status_code == 202, r.text
    token = r.json()["consistency"]["token"]
    assert "c" in token
    r = api.post(
        f"/v1/banks/{bank}/recall", json={"query": "Which marathon is Omar training for?", "after": token}
    )
    found = {x["id"]: x["text"] for x in r.json()["results"]}
    assert found[target] == "Omar is training for the Porto marathon in November."

    detail = api.get(f"/v1/banks/{bank}/memories/{target}").json()
    assert detail["text"] == "Omar is training for the Porto marathon in November."
    assert detail["tags"] == ["sport"]
    assert [h["text"] for h in detail["history"]] == [old["text"]]
    assert detail["history"][0]["reason"] == "typo"
    names = {e["canonical_name"] for e in detail["entities"]}
    assert "Porto" in names and "Lisbon" not in names, names

    assert api.post(f"/v1/banks/{bank}/replay").status_code == 202
    settled(api, bank)
    again = api.get(f"/v1/banks/{bank}/memories/{target}").json()
    assert again["text"] == "Omar is training for the Porto marathon in November."
    assert again["tags"] == ["sport"] and len(again["history"]) == 1
    assert "Porto" in {e["canonical_name"] for e in again["entities"]}


def test_correcting_nothing_or_a_missing_fact_is_refused(api: httpx.Client, bank: str) -> None:
    nil = "00000000-0000-0000-0000-000000000000"
    assert api.patch(f"/v1/banks/{bank}/memories/{nil}", json={"text": "x"}).status_code == 404
    r = api.patch(f"/v1/banks/{bank}/memories/{nil}", json={"reason": "only a reason"})
    assert r.status_code == 422 and "at least one" in r.text
