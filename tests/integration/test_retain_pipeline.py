"""Retain end to end on the embedded stack: API → broker → agents → Postgres."""

from __future__ import annotations

import asyncio
import json
import uuid
from datetime import UTC, datetime

import asyncpg
import httpx
import pytest
from aiokafka import AIOKafkaProducer

from tempr.schemas.events import MessageEvent, encode_event
from tempr.schemas.ids import stable_id
from tempr.store.migrate import apply_migrations
from tempr.streams.runtime import Supervisor
from tempr.streams.topics import MESSAGES
from tests.conftest import async_wait_until, wait_until

pytestmark = pytest.mark.integration


def _count(api: httpx.Client, bank: str) -> int:
    return api.get(f"/v1/banks/{bank}/memories", params={"limit": 1}).json()["total"]


def test_health_reports_database_broker_and_lag(api: httpx.Client) -> None:
    body = api.get("/health").json()
    assert body["status"] == "ok"
    assert body["database"] == "ok" and body["broker"] == "ok"
    assert isinstance(body["pending_events"], int)


def test_retain_becomes_a_stored_fact_with_provenance(api: httpx.Client, bank: str) -> None:
    r = api.post(
        f"/v1/banks/{bank}/memories",
        json={
            "items": [
                {
                    "content": "Alice adopted a grey cat named Pixel.",
                    "speaker": "Alice",
                    "timestamp": "2024-03-02T10:00:00Z",
                    "message_id": "m-1",
                    "tags": ["pets"],
                }
            ]
        },
    )
    assert r.status_code == 202, r.text
    body = r.json()
    assert body["accepted"] == 1 and len(body["event_ids"]) == 1
    assert body["consistency"]["token"].startswith("j")
    assert body["consistency"]["topic"] == "tempr.messages.v1"

    wait_until(lambda: _count(api, bank) >= 1, timeout=60)
    items = api.get(f"/v1/banks/{bank}/memories").json()["items"]
    assert len(items) == 1
    fact = items[0]
    assert "Pixel" in fact["text"]
    assert fact["source_message_ids"] == ["m-1"]
    assert fact["tags"] == ["pets"]
    assert fact["mentioned_at"].startswith("2024-03-02")


def test_same_event_twice_is_stored_once(api: httpx.Client, bank: str, stack: Supervisor) -> None:
    item = {
        "content": "Bob moved to Lisbon in May.",
        "speaker": "Bob",
        "message_id": "dup-1",
        "timestamp": "2024-05-20T09:00:00Z",
    }
    for _ in range(2):
        assert api.post(f"/v1/banks/{bank}/memories", json={"items": [item]}).status_code == 202
    # And once more straight onto the topic, as a redelivery would.
    event = MessageEvent(
        event_id=stable_id(bank, "message", "dup-1"),
        bank_id=bank,
        message_id="dup-1",
        content=item["content"],
        speaker="Bob",
        timestamp=datetime(2024, 5, 20, 9, tzinfo=UTC),
        received_at=datetime.now(UTC),
    )
    asyncio.run(_produce(stack.settings.bootstrap, [encode_event(event)] * 2, key=f"{bank}/".encode()))
    wait_until(lambda: _count(api, bank) >= 1, timeout=60)
    # Give the redelivered copies time to pass through, then check nothing doubled.
    r = api.post(
        f"/v1/banks/{bank}/memories",
        json={"items": [{"content": "Marker after the duplicates.", "message_id": "marker"}]},
    )
    assert r.status_code == 202
    wait_until(lambda: _count(api, bank) >= 2, timeout=60)
    items = api.get(f"/v1/banks/{bank}/memories").json()["items"]
    assert sorted(i["source_message_ids"][0] for i in items) == ["dup-1", "marker"]


async def _produce(bootstrap: str, values: list[bytes], *, key: bytes | None = None) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, enable_idempotence=False)
    await producer.start()
    try:
        for value in values:
            await producer.send_and_wait(MESSAGES.name, value=value, key=key)
    finally:
        await producer.stop()


def test_malformed_records_go_to_the_dlq_and_the_pipeline_continues(
    api: httpx.Client, bank: str, stack: Supervisor
) -> None:
    marker = uuid.uuid4().hex
    bad_json = f"not json {marker}".encode()
    schema_violation = json.dumps({"event_type": "message", "schema_version": 1, "marker": marker}).encode()
    good = MessageEvent(
        event_id=stable_id(bank, "message", "good-1"),
        bank_id=bank,
        message_id="good-1",
        content="Carol plays the cello.",
        received_at=datetime.now(UTC),
    ).model_dump(mode="json")
    bad_bank = json.dumps({**good, "bank_id": "no spaces allowed", "marker": marker}).encode()
    asyncio.run(
        _produce(stack.settings.bootstrap, [bad_json, schema_violation, bad_bank, json.dumps(good).encode()])
    )
    wait_until(lambda: _count(api, bank) == 1, timeout=60)

    def letters() -> list[dict]:
        return [
            d for d in api.get("/v1/dead-letters", params={"limit": 1000}).json() if marker in d["payload"]
        ]

    wait_until(lambda: len(letters()) == 3, timeout=60)
    reasons = " | ".join(d["error"] for d in letters())
    assert "Invalid JSON" in reasons
    assert "event_id: Field required" in reasons
    assert "bank_id: String should match pattern" in reasons
    assert all(d["stage"] == "segment_messages" and d["topic"] == MESSAGES.name for d in letters())


def test_api_rejects_bad_input_with_a_message(api: httpx.Client, bank: str) -> None:
    r = api.post(f"/v1/banks/{bank}/memories", json={"items": [{"speaker": "x"}]})
    assert r.status_code == 422 and "content" in r.text
    r = api.post("/v1/banks/bad%20bank/memories", json={"items": [{"content": "x"}]})
    assert r.status_code == 422 and "bank_id" in r.text
    r = api.post(f"/v1/banks/{bank}/memories", json={"items": [{"content": "x", "timestamp": "yesterday"}]})
    assert r.status_code == 422 and "timestamp" in r.text
    r = api.post(f"/v1/banks/{bank}/memories", json={"items": []})
    assert r.status_code == 422


def test_banks_never_see_each_others_rows(api: httpx.Client) -> None:
    a, b = f"iso-a-{uuid.uuid4().hex[:8]}", f"iso-b-{uuid.uuid4().hex[:8]}"
    api.post(f"/v1/banks/{a}/memories", json={"items": [{"content": "Secret of bank A: the vault code."}]})
    api.post(f"/v1/banks/{b}/memories", json={"items": [{"content": "Bank B likes sunflowers in July."}]})
    wait_until(lambda: _count(api, a) == 1 and _count(api, b) == 1, timeout=60)
    assert "vault" in api.get(f"/v1/banks/{a}/memories").json()["items"][0]["text"]
    assert "sunflowers" in api.get(f"/v1/banks/{b}/memories").json()["items"][0]["text"]


async def test_migrations_run_twice_and_concurrently(stack: Supervisor, db: asyncpg.Pool) -> None:
    dsn = stack.settings.database_url
    assert dsn
    assert await apply_migrations(dsn) == []  # already current: nothing to do
    name = f"migr_{uuid.uuid4().hex[:8]}"
    await db.execute(f'CREATE DATABASE "{name}"')
    fresh = dsn.replace("/postgres?", f"/{name}?")
    results = await asyncio.gather(*(apply_migrations(fresh) for _ in range(3)))
    assert sorted(len(r) for r in results) == [0, 0, len(max(results, key=len))]
    assert max(results, key=len)[0].startswith("0001")
    conn = await asyncpg.connect(fresh)
    try:
        tables = {
            r["tablename"]
            for r in await conn.fetch("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
        }
        assert {
            "banks",
            "documents",
            "chunks",
            "memory_units",
            "entities",
            "unit_entities",
            "memory_links",
            "watermarks",
            "messages",
            "dead_letters",
        } <= tables
        indexes = {r["indexname"] for r in await conn.fetch("SELECT indexname FROM pg_indexes")}
        # No index shared by all banks' vectors (it answered for all banks at once): big banks
        # get their own (store/vector_indexes.py).
        assert "memory_units_embedding_hnsw" not in indexes and "memory_units_search_gin" in indexes
    finally:
        await conn.close()


async def test_materializer_advances_the_watermark(api: httpx.Client, bank: str, db: asyncpg.Pool) -> None:
    api.post(f"/v1/banks/{bank}/memories", json={"items": [{"content": "Dana runs every Sunday."}]})

    async def marked() -> bool:
        return bool(await db.fetchval("SELECT count(*) FROM watermarks WHERE bank_id = $1", bank))

    await async_wait_until(marked, timeout=60)
    pending = await db.fetchval(
        "SELECT count(*) FROM messages WHERE bank_id = $1 AND processed_at IS NULL", bank
    )
    assert pending == 0
