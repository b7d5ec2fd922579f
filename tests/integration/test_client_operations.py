"""The Python client's operations calls against the live API: replaying a bank, dead letters."""

from __future__ import annotations

import asyncio
import time
import uuid
from datetime import UTC, datetime

import httpx
import pytest

from tempr.client import AsyncTemprClient, TemprAPIError, TemprClient
from tempr.schemas.api import DeadLetterOut
from tempr.schemas.operations import BankReplayResponse, DeadLetterReplayed
from tempr.streams.runtime import Supervisor
from tempr.streams.topics import MESSAGES
from tests.integration.test_dead_letter_replay import produce_bad_record

pytestmark = pytest.mark.integration

TURNS = [
    {"content": "I started learning the cello in March.", "speaker": "Lena", "conversation_id": "c"},
    {"content": "How are the lessons going?", "speaker": "Max", "conversation_id": "c"},
]


def _settled(tempr: TemprClient, bank: str) -> None:
    deadline = time.monotonic() + 60
    while tempr.stats(bank).pending_events:
        assert time.monotonic() < deadline, "the bank did not settle within 60s"
        time.sleep(0.2)


def _facts(tempr: TemprClient, bank: str) -> dict[uuid.UUID, str]:
    return {m.id: m.text for m in tempr.memories(bank, limit=1000).items}


def _with_marker(letters: list[DeadLetterOut], marker: str) -> list[DeadLetterOut]:
    return sorted((d for d in letters if marker in d.payload), key=lambda d: d.offset or 0)


def test_sync_replay_counts_what_it_removed_and_its_token_waits_for_the_rebuild(
    api: httpx.Client, bank: str
) -> None:
    with TemprClient(str(api.base_url)) as tempr:
        tempr.retain(bank, TURNS)
        _settled(tempr, bank)
        before, stats = _facts(tempr, bank), tempr.stats(bank)
        assert before

        out = tempr.replay(bank)
        assert isinstance(out, BankReplayResponse)
        assert (out.bank_id, out.messages_replayed, out.facts_removed) == (bank, 2, stats.facts)
        assert out.consistency.token == f"j{out.consistency.journal_seq}"
        assert out.consistency.topic == MESSAGES.name and out.consistency.partitions

        # The token is one recall's `after` accepts: once it answers, the rebuild is done,
        # and an unchanged pipeline made exactly the same facts.
        found = tempr.recall(bank, "What instrument is Lena learning?", after=out.consistency.token)
        assert any("cello" in fact.text for fact in found.results)
        assert tempr.stats(bank).pending_events == 0
        assert _facts(tempr, bank) == before

        # `from_` is sent: nothing was accepted after a time to come, as a datetime or as text.
        assert tempr.replay(bank, from_=datetime(2999, 1, 1, tzinfo=UTC)).messages_replayed == 0
        assert tempr.replay(bank, from_="2999-01-01T00:00:00Z").facts_removed == 0
        assert _facts(tempr, bank) == before
        with pytest.raises(TemprAPIError) as naive:
            tempr.replay(bank, from_=datetime(2024, 1, 1))
        assert naive.value.status_code == 422

        unknown = f"{bank}-unknown"
        with pytest.raises(TemprAPIError) as missing:
            tempr.replay(unknown)
        assert missing.value.status_code == 404
        assert missing.value.detail == f"bank {unknown} not found"


def test_sync_dead_letters_are_listed_replayed_once_then_forced(api: httpx.Client, stack: Supervisor) -> None:
    marker = uuid.uuid4().hex
    partition, offset = produce_bad_record(stack.settings.bootstrap, marker)
    with TemprClient(str(api.base_url)) as tempr:
        deadline = time.monotonic() + 60
        while not (letters := _with_marker(tempr.dead_letters(limit=1000), marker)):
            assert time.monotonic() < deadline, "no dead letter within 60s"
            time.sleep(0.2)
        [letter] = letters
        assert isinstance(letter, DeadLetterOut)
        assert (letter.topic, letter.partition, letter.offset) == (MESSAGES.name, partition, offset)
        assert letter.key == f"dlq/{marker}" and letter.replayed_at is None
        assert letter.id in {d.id for d in tempr.dead_letters(limit=1000, replayed=False)}
        assert letter.id not in {d.id for d in tempr.dead_letters(limit=1000, replayed=True)}
        assert len(tempr.dead_letters(limit=1)) == 1

        out = tempr.replay_dead_letter(letter.id)
        assert isinstance(out, DeadLetterReplayed)
        assert (out.id, out.topic, out.partition) == (letter.id, MESSAGES.name, partition)
        assert out.offset > offset and out.previously_replayed_at is None
        stamped = {d.id: d for d in tempr.dead_letters(limit=1000, replayed=True)}
        assert stamped[letter.id].replayed_at == out.replayed_at
        # Paging reaches past the first page (replayed letters change only when one is replayed).
        two = tempr.dead_letters(limit=2, replayed=True)
        assert [d.id for d in two[1:]] == [d.id for d in tempr.dead_letters(limit=1, offset=1, replayed=True)]

        with pytest.raises(TemprAPIError) as again:
            tempr.replay_dead_letter(str(letter.id))
        assert again.value.status_code == 409 and "already replayed" in str(again.value.detail)
        forced = tempr.replay_dead_letter(letter.id, force=True)
        assert forced.previously_replayed_at == out.replayed_at and forced.offset > out.offset

        with pytest.raises(TemprAPIError) as unknown:
            tempr.replay_dead_letter(uuid.uuid4())
        assert unknown.value.status_code == 404 and "not found" in str(unknown.value.detail)


async def test_async_client_replays_a_bank_and_dead_letters(
    api: httpx.Client, stack: Supervisor, bank: str
) -> None:
    async with AsyncTemprClient(str(api.base_url)) as tempr:
        with pytest.raises(TemprAPIError) as missing:
            await tempr.replay(bank)
        assert missing.value.status_code == 404 and bank in str(missing.value.detail)

        retained = await tempr.retain(bank, TURNS)
        await tempr.recall(bank, "cello", after=retained.consistency.token)
        stats = await tempr.stats(bank)
        out = await tempr.replay(bank)
        assert (out.messages_replayed, out.facts_removed) == (2, stats.facts)
        found = await tempr.recall(bank, "What instrument is Lena learning?", after=out.consistency.token)
        assert any("cello" in fact.text for fact in found.results)
        assert (await tempr.stats(bank)).facts == stats.facts
        assert (await tempr.replay(bank, from_="2999-01-01T00:00:00Z")).messages_replayed == 0

        marker = uuid.uuid4().hex
        await asyncio.to_thread(produce_bad_record, stack.settings.bootstrap, marker)
        deadline = time.monotonic() + 60
        while not (letters := _with_marker(await tempr.dead_letters(limit=1000, replayed=False), marker)):
            assert time.monotonic() < deadline, "no dead letter within 60s"
            await asyncio.sleep(0.2)
        [letter] = letters
        replayed = await tempr.replay_dead_letter(letter.id)
        assert replayed.id == letter.id and replayed.previously_replayed_at is None
        with pytest.raises(TemprAPIError) as again:
            await tempr.replay_dead_letter(letter.id)
        assert again.value.status_code == 409
        forced = await tempr.replay_dead_letter(letter.id, force=True)
        assert forced.previously_replayed_at == replayed.replayed_at
