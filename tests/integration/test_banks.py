"""Banks: profiles, deletion that leaves nothing and survives a replay of the log, and reflect
without an LLM (the session stack has none)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import asyncpg
import httpx
import pytest
from aiokafka import AIOKafkaProducer

from tempr.schemas.events import BankDeleted, MessageEvent, encode_event
from tempr.streams.control import control_key, sign_tombstone
from tempr.streams.runtime import Supervisor
from tempr.streams.topics import MESSAGES, conversation_key
from tests.conftest import async_wait_until

pytestmark = pytest.mark.integration

_TABLES = ("memory_units", "entities", "unit_entities", "memory_links", "chunks", "messages", "watermarks")


def _retain(api: httpx.Client, bank: str, *texts: str) -> str:
    items = [
        {"content": t, "speaker": "Nora", "conversation_id": "c", "message_id": f"{bank}-{i}"}
        for i, t in enumerate(texts)
    ]
    response = api.post(f"/v1/banks/{bank}/memories", json={"items": items})
    assert response.status_code == 202
    return response.json()["consistency"]["token"]


def _settled(api: httpx.Client, bank: str, token: str) -> None:
    assert api.post(f"/v1/banks/{bank}/recall", json={"query": "anything", "after": token}).status_code == 200


async def _rows(db: asyncpg.Pool, bank: str) -> dict[str, int]:
    counts = {t: await db.fetchval(f"SELECT count(*) FROM {t} WHERE bank_id = $1", bank) for t in _TABLES}
    counts["banks"] = await db.fetchval("SELECT count(*) FROM banks WHERE id = $1", bank)
    return counts


def test_profile_create_read_patch_list(api: httpx.Client, bank: str) -> None:
    created = api.put(f"/v1/banks/{bank}", json={"name": "Nora", "disposition": {"empathy": 5}})
    assert created.status_code == 201
    assert created.json()["disposition"] == {
        "skepticism": 3,
        "literalism": 3,
        "empathy": 5,
        "bias_strength": 0.5,
    }
    assert api.put(f"/v1/banks/{bank}", json={"name": "Nora B."}).status_code == 200
    assert api.get(f"/v1/banks/{bank}").json()["name"] == "Nora B."

    patched = api.patch(
        f"/v1/banks/{bank}",
        json={
            "disposition": {"skepticism": 4},
            "background": "I like trains.",
            "config": {"observations": False},
        },
    ).json()
    assert patched["disposition"]["skepticism"] == 4 and patched["disposition"]["empathy"] == 3
    assert patched["config"] == {
        "reflect_budget": None,
        "form_opinions": None,
        "reinforce_opinions": None,
        "observations": False,
        "graph_retriever": None,
        "message_retention_days": None,
        "fact_retention_days": None,
    }
    # Without an LLM a new background is appended, nothing lost.
    appended = api.patch(f"/v1/banks/{bank}", json={"background": "I moved to Oslo."}).json()
    assert appended["background"] == "I like trains.\nI moved to Oslo."
    assert appended["name"] == "Nora B."

    assert api.put(f"/v1/banks/{bank}", json={"disposition": {"skepticism": 6}}).status_code == 422
    assert api.patch(f"/v1/banks/{bank}", json={"colour": "blue"}).status_code == 422
    assert api.get("/v1/banks/no-such-bank-here").status_code == 404
    assert api.patch("/v1/banks/no-such-bank-here", json={"name": "x"}).status_code == 404
    assert api.get("/v1/banks/no-such-bank-here/stats").status_code == 404

    ids: list[str] = []
    offset = 0
    while True:
        page = api.get("/v1/banks", params={"limit": 50, "offset": offset}).json()
        ids += [b["bank_id"] for b in page["items"]]
        offset += 50
        if offset >= page["total"]:
            break
    assert bank in ids and ids == sorted(ids) and len(ids) == len(set(ids))


def test_retain_creates_the_bank(api: httpx.Client, bank: str) -> None:
    _retain(api, bank, "Nora plays the cello.")
    assert api.get(f"/v1/banks/{bank}").json()["name"] == bank


async def test_delete_leaves_no_rows_and_survives_a_replay(
    api: httpx.Client, bank: str, db: asyncpg.Pool, stack: Supervisor
) -> None:
    token = _retain(api, bank, "Nora adopted a cat named Miso.", "Miso likes the windowsill.")
    await asyncio.to_thread(_settled, api, bank, token)
    assert (await _rows(db, bank))["memory_units"] >= 2
    journal = [
        MessageEvent.model_validate(r["payload"])
        for r in await db.fetch("SELECT payload FROM messages WHERE bank_id = $1", bank)
    ]

    deleted = api.delete(f"/v1/banks/{bank}")
    assert deleted.status_code == 200
    assert deleted.json()["deleted"]["memory_units"] >= 2 and deleted.json()["deleted"]["banks"] == 1
    assert set((await _rows(db, bank)).values()) == {0}
    assert api.get(f"/v1/banks/{bank}").status_code == 404
    assert api.delete(f"/v1/banks/{bank}").status_code == 404

    # A replay of the log: the bank's old messages arrive again, straight on the topic.
    producer = AIOKafkaProducer(bootstrap_servers=stack.settings.bootstrap, enable_idempotence=False)
    await producer.start()
    try:
        for event in journal:
            await producer.send_and_wait(
                MESSAGES.name, encode_event(event), key=conversation_key(bank, event.conversation_id)
            )
    finally:
        await producer.stop()
    # A later retain to another bank is materialized; by then the stale ones were seen too.
    control = f"{bank}-control"
    await asyncio.to_thread(_settled, api, control, _retain(api, control, "Control message."))
    await asyncio.sleep(3)
    assert set((await _rows(db, bank)).values()) == {0}

    # The id can be used again; only new messages count.
    token = _retain(api, bank, "Nora started pottery classes.")
    await asyncio.to_thread(_settled, api, bank, token)
    texts = [m["text"] for m in api.get(f"/v1/banks/{bank}/memories").json()["items"]]
    assert texts and all("Miso" not in t for t in texts) and any("pottery" in t for t in texts)


async def test_tombstone_from_the_log_removes_the_bank(
    api: httpx.Client, bank: str, db: asyncpg.Pool, stack: Supervisor
) -> None:
    """Replaying a log into a store that never saw the deletion: the tombstone event does it."""
    token = _retain(api, bank, "Nora keeps bees.")
    await asyncio.to_thread(_settled, api, bank, token)
    assert (await _rows(db, bank))["memory_units"] >= 1
    producer = AIOKafkaProducer(bootstrap_servers=stack.settings.bootstrap, enable_idempotence=False)
    await producer.start()
    try:
        tombstone = sign_tombstone(
            BankDeleted(bank_id=bank, deleted_at=datetime.now(UTC)), control_key(stack.settings)
        )
        await producer.send_and_wait(MESSAGES.name, encode_event(tombstone), key=conversation_key(bank, None))
    finally:
        await producer.stop()

    async def gone() -> bool:
        return set((await _rows(db, bank)).values()) == {0}

    await async_wait_until(gone, timeout=30)
    assert await db.fetchval("SELECT count(*) FROM deleted_banks WHERE id = $1", bank) == 1


def test_reflect_without_an_llm_is_a_clean_501(api: httpx.Client, bank: str) -> None:
    token = _retain(api, bank, "Nora runs on Sundays.")
    answer = api.post(f"/v1/banks/{bank}/reflect", json={"query": "What does Nora do on Sundays?"})
    assert answer.status_code == 501
    assert "TEMPR_LLM_BASE_URL" in answer.text and "recall work" in answer.text
    recalled = api.post(f"/v1/banks/{bank}/recall", json={"query": "Sundays", "after": token}).json()
    assert any("Sundays" in r["text"] for r in recalled["results"])
