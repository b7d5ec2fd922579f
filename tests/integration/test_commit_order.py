"""The worker group's committed offset never passes a turn the segmenter still holds.

A turn waits in the segmenter's buffer until its conversation's chunk is sent. Turns of
another conversation behind it on the same partition are chunked and acked first; if that
moved the committed offset past the held turn, a worker dying now would lose it (the next
owner of the partition starts at the committed offset). One partition, a long idle gap so the
held turn stays held, and the committed offset read from the broker.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition

from tempr.producer import TemprProducer
from tempr.streams.runtime import Supervisor
from tempr.streams.topics import MESSAGES, WORKER_GROUP
from tests.conftest import async_wait_until, make_settings, running_stack

pytestmark = pytest.mark.integration

BANK = "commit-order"
COMMIT_INTERVAL_S = 1.0  # `broker_commit_interval` in streams/app.py


@pytest.fixture(scope="module")
def held_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Supervisor]:
    settings = make_settings(
        tmp_path_factory.mktemp("commit-order"),
        topic_partitions=1,  # every conversation on one partition
        chunk_idle_s=60.0,  # a turn stays buffered until its conversation ends
        redeliver_after_s=3600.0,  # the journal sweeper stays out of it
    )
    with running_stack(settings) as stack:
        yield stack


@pytest.fixture
async def http(held_stack: Supervisor) -> AsyncIterator[httpx.AsyncClient]:
    s = held_stack.settings
    async with httpx.AsyncClient(base_url=f"http://{s.host}:{s.port}", timeout=30) as client:
        yield client


async def _committed(bootstrap: str) -> int | None:
    # A consumer of the worker group that never joins it: it only reads the group's offset.
    reader = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=WORKER_GROUP, enable_auto_commit=False)
    await reader.start()
    try:
        offset = await reader.committed(TopicPartition(MESSAGES.name, 0))
    finally:
        await reader.stop()
    return offset if offset is not None and offset >= 0 else None


def _turn(mid: str, conversation: str, text: str) -> dict[str, Any]:
    return {"content": text, "speaker": "Maya", "message_id": mid, "conversation_id": conversation}


async def _cited(http: httpx.AsyncClient) -> set[str]:
    facts = (await http.get(f"/v1/banks/{BANK}/memories", params={"limit": 1000})).json()["items"]
    return {m for f in facts for m in f["source_message_ids"]}


async def test_a_held_turn_keeps_the_committed_offset_at_it_until_its_chunk_is_sent(
    held_stack: Supervisor, http: httpx.AsyncClient
) -> None:
    bootstrap = held_stack.settings.bootstrap
    async with TemprProducer(bootstrap) as producer:
        # A finished conversation first: the commit reaches the next offset, so the commit
        # timer is known to run and the held turn will sit right at the committed offset.
        await producer.send(BANK, [_turn("w1", "warm", "I adopted a grey cat named Pixel.")])
        warm_end = await producer.end_conversation(BANK, "warm")
        await async_wait_until(lambda: _committed_is(bootstrap, warm_end.offset + 1), timeout=90)

        (held,) = await producer.send(BANK, [_turn("h1", "held", "My sister Ana lives in Porto now.")])
        assert held.offset == warm_end.offset + 1
        await producer.send(BANK, [_turn("d1", "done", "I started rowing on Tuesdays at the club.")])
        done_end = await producer.end_conversation(BANK, "done")

        # The later conversation went all the way through, so its turns were acked long
        # ago; a few commit intervals more, and the commit still waits at the held turn.
        await async_wait_until(lambda: _cites(http, "d1"), timeout=90)
        await asyncio.sleep(4 * COMMIT_INTERVAL_S)
        assert await _committed(bootstrap) == held.offset
        assert "h1" not in await _cited(http)  # still held, not lost

        # Its conversation ends: the held turn is chunked, and the commit moves past it all.
        held_end = await producer.end_conversation(BANK, "held")
        assert held_end.offset > done_end.offset
        await async_wait_until(lambda: _cites(http, "h1"), timeout=90)
        await async_wait_until(lambda: _committed_is(bootstrap, held_end.offset + 1), timeout=30)


async def _committed_is(bootstrap: str, offset: int) -> bool:
    return await _committed(bootstrap) == offset


async def _cites(http: httpx.AsyncClient, mid: str) -> bool:
    return mid in await _cited(http)
