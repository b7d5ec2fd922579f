"""`TemprProducer`: a chat platform producing straight to the broker, then recall finds it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from pydantic import ValidationError

from tempr.producer import TemprProducer
from tempr.schemas.ids import stable_id
from tempr.streams.runtime import Supervisor
from tempr.streams.topics import MESSAGES
from tests.conftest import async_wait_until

pytestmark = pytest.mark.integration

TURNS = [
    ("p1", "Maya", "I moved to Lisbon last month for a job at a bakery."),
    ("p2", "Tom", "Lisbon! Do you like the bakery job?"),
    ("p3", "Maya", "I love it, I bake pastel de nata every morning."),
]


def _items(turns: list[tuple[str, str, str]]) -> list[dict[str, Any]]:
    return [
        {
            "content": text,
            "speaker": speaker,
            "message_id": mid,
            "conversation_id": "chat-1",
            "timestamp": f"2024-05-0{i + 1}T10:00:00Z",
        }
        for i, (mid, speaker, text) in enumerate(turns)
    ]


@pytest.fixture
async def http(api: httpx.Client) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=api.base_url, timeout=30) as client:
        yield client


async def _facts(http: httpx.AsyncClient, bank: str) -> list[dict[str, Any]]:
    return (await http.get(f"/v1/banks/{bank}/memories", params={"limit": 1000})).json()["items"]


async def test_produced_messages_are_recalled_and_a_resend_doubles_nothing(
    stack: Supervisor, http: httpx.AsyncClient, bank: str
) -> None:
    async with TemprProducer(stack.settings.bootstrap) as producer:
        deliveries = await producer.send(bank, _items(TURNS))
        await producer.end_conversation(bank, "chat-1")

        assert [d.event_id for d in deliveries] == [stable_id(bank, "message", mid) for mid, _, _ in TURNS]
        assert {d.topic for d in deliveries} == {MESSAGES.name}
        # One conversation, one partition, in order: the segmenter sees the turns as sent.
        assert len({d.partition for d in deliveries}) == 1
        assert [d.offset for d in deliveries] == sorted({d.offset for d in deliveries})

        async def turns_materialized() -> bool:
            cited = {m for f in await _facts(http, bank) for m in f["source_message_ids"]}
            return cited >= {"p1", "p2", "p3"}

        await async_wait_until(turns_materialized, timeout=90)
        recalled = await http.post(
            f"/v1/banks/{bank}/recall", json={"query": "Which city did Maya move to?", "budget": "low"}
        )
        assert recalled.status_code == 200, recalled.text
        assert any("Lisbon" in r["text"] for r in recalled.json()["results"])
        before = {f["id"]: f["text"] for f in await _facts(http, bank)}

        # The platform resends the whole conversation, plus one new turn after it (same
        # partition, so once the new turn is in, the resent ones were processed too).
        again = await producer.send(bank, _items([*TURNS, ("p4", "Tom", "Send me a photo of the nata!")]))
        await producer.end_conversation(bank, "chat-1")
        assert [d.event_id for d in again[:3]] == [d.event_id for d in deliveries]

        async def new_turn_materialized() -> bool:
            return any("p4" in f["source_message_ids"] for f in await _facts(http, bank))

        await async_wait_until(new_turn_materialized, timeout=90)

    after = await _facts(http, bank)
    texts = [f["text"] for f in after]
    assert len(texts) == len(set(texts)), "a resent message doubled a fact"
    assert {f["id"]: f["text"] for f in after if "p4" not in f["source_message_ids"]} == before

    # The same message through the HTTP API is the same event, and stores nothing new.
    retained = await http.post(f"/v1/banks/{bank}/memories", json={"items": _items(TURNS)[:1]})
    assert retained.status_code == 202, retained.text
    assert retained.json()["event_ids"] == [str(deliveries[0].event_id)]
    token = retained.json()["consistency"]["token"]
    waited = await http.post(
        f"/v1/banks/{bank}/recall", json={"query": "Lisbon", "budget": "low", "after": token}
    )
    assert waited.status_code == 200, waited.text
    assert {f["id"] for f in await _facts(http, bank)} == {f["id"] for f in after}


async def test_an_invalid_item_is_refused_like_the_api_refuses_it(stack: Supervisor, bank: str) -> None:
    async with TemprProducer(stack.settings.bootstrap) as producer:
        with pytest.raises(ValidationError):
            await producer.send(bank, [{"content": "fine"}, {"content": "   "}])
