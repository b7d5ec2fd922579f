"""`POST /v1/dead-letters/{id}/replay`: a failed record goes back to its topic, once unless forced."""

from __future__ import annotations

import asyncio
import json
import uuid
from datetime import datetime
from typing import Any

import httpx
import pytest

from tempr.streams.publisher import create_producer
from tempr.streams.runtime import Supervisor
from tempr.streams.topics import MESSAGES
from tests.conftest import wait_until

pytestmark = pytest.mark.integration


def produce_bad_record(bootstrap: str, marker: str) -> tuple[int, int]:
    """A message event that fails validation (no ids, no content); its partition and offset."""

    async def send() -> tuple[int, int]:
        producer = create_producer(bootstrap)
        await producer.start()
        try:
            value = json.dumps({"event_type": "message", "schema_version": 1, "marker": marker}).encode()
            meta = await producer.send_and_wait(MESSAGES.name, value=value, key=f"dlq/{marker}".encode())
            return meta.partition, meta.offset
        finally:
            await producer.stop()

    return asyncio.run(send())


def letters_with(api: httpx.Client, marker: str, **params: Any) -> list[dict[str, Any]]:
    found = api.get("/v1/dead-letters", params={"limit": 1000, **params}).json()
    return sorted((d for d in found if marker in d["payload"]), key=lambda d: d["offset"])


def wait_for_letters(api: httpx.Client, marker: str, count: int) -> list[dict[str, Any]]:
    wait_until(lambda: len(letters_with(api, marker)) >= count, timeout=60)
    return letters_with(api, marker)


def test_a_replayed_letter_goes_back_to_its_topic_and_is_stamped(
    api: httpx.Client, stack: Supervisor
) -> None:
    marker = uuid.uuid4().hex
    partition, offset = produce_bad_record(stack.settings.bootstrap, marker)
    [letter] = wait_for_letters(api, marker, 1)
    assert (letter["topic"], letter["partition"], letter["offset"]) == (MESSAGES.name, partition, offset)
    assert letter["key"] == f"dlq/{marker}" and letter["replayed_at"] is None

    r = api.post(f"/v1/dead-letters/{letter['id']}/replay")
    assert r.status_code == 200, r.text
    out = r.json()
    # Same key, so same partition, further along the log.
    assert out["topic"] == MESSAGES.name and out["partition"] == partition and out["offset"] > offset
    assert out["replayed_at"] and out["previously_replayed_at"] is None

    # Still invalid: it fails again and becomes a new letter for the new offset.
    first, second = wait_for_letters(api, marker, 2)
    assert first["id"] == letter["id"] and first["replayed_at"] is not None
    assert second["offset"] == out["offset"] and second["replayed_at"] is None
    assert second["payload"] == letter["payload"] and second["key"] == letter["key"]
    assert [d["id"] for d in letters_with(api, marker, replayed="false")] == [second["id"]]
    assert [d["id"] for d in letters_with(api, marker, replayed="true")] == [letter["id"]]

    again = api.post(f"/v1/dead-letters/{letter['id']}/replay")
    assert again.status_code == 409 and "already replayed" in again.json()["detail"]
    forced = api.post(f"/v1/dead-letters/{letter['id']}/replay", params={"force": "true"})
    assert forced.status_code == 200, forced.text
    previously = forced.json()["previously_replayed_at"]
    assert datetime.fromisoformat(previously) == datetime.fromisoformat(first["replayed_at"])
    assert forced.json()["offset"] > out["offset"]


def test_an_unknown_letter_is_404(api: httpx.Client) -> None:
    r = api.post(f"/v1/dead-letters/{uuid.uuid4()}/replay")
    assert r.status_code == 404 and "not found" in r.json()["detail"]
    assert api.post("/v1/dead-letters/not-a-uuid/replay").status_code == 422
