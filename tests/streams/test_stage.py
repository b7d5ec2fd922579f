"""The stage harness's failure path, without a broker: budget, poison isolation, outages."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from tempr.schemas.events import ChunkEvent, MessageEvent
from tempr.streams.stage import BatchRunner, Record, journal_ids


def _records(*names: str) -> list[Record[Any]]:
    return [Record(event=name, source=None) for name in names]  # type: ignore[arg-type]


async def _run(
    handle: Any, records: list[Record[Any]], budget_s: float = 0.5, database_up: Any = None
) -> list[tuple[str, str]]:
    failed: list[tuple[str, str]] = []

    async def on_failure(record: Record[Any], reason: str) -> None:
        failed.append((record.event, reason))

    runner = BatchRunner(
        handle, on_failure, budget_s=budget_s, database_up=database_up, outage_backoff_s=0.01
    )
    await runner.run(records)
    return failed


async def test_a_record_past_the_budget_is_dead_lettered_and_its_batch_mates_go_on() -> None:
    done: list[str] = []

    async def handle(records: list[Record[Any]]) -> None:
        for r in records:
            if r.event == "slow":
                await asyncio.sleep(30)
        done.extend(r.event for r in records)

    started = time.monotonic()
    failed = await _run(handle, _records("a", "slow", "b"), budget_s=0.3)
    assert time.monotonic() - started < 3
    assert [f[0] for f in failed] == ["slow"]
    assert "time budget" in failed[0][1]
    assert sorted(done) == ["a", "b"]


async def test_an_error_dead_letters_only_the_record_that_raises() -> None:
    done: list[str] = []

    async def handle(records: list[Record[Any]]) -> None:
        if any(r.event == "bad" for r in records):
            raise ValueError("cannot read this one")
        done.extend(r.event for r in records)

    failed = await _run(handle, _records("a", "bad", "b"))
    assert failed == [("bad", "ValueError('cannot read this one')")]
    assert sorted(done) == ["a", "b"]


async def test_a_database_outage_is_waited_out_not_dead_lettered() -> None:
    calls = {"n": 0}

    async def handle(records: list[Record[Any]]) -> None:
        calls["n"] += 1
        if calls["n"] < 4:
            raise ConnectionRefusedError("postgres is down")

    failed = await _run(handle, _records("a", "b"))
    assert failed == []
    assert calls["n"] == 4


async def test_an_error_of_no_outage_type_while_the_database_is_down_is_waited_out() -> None:
    # What a connection cut mid-query raised in the worker (a test of Postgres killed mid-ingest).
    import asyncpg

    state = {"down_probes": 3, "calls": 0}

    async def database_up() -> bool:
        if state["down_probes"]:
            state["down_probes"] -= 1
            return False
        return True

    async def handle(records: list[Record[Any]]) -> None:
        state["calls"] += 1
        if state["down_probes"]:
            raise asyncpg.InternalClientError(
                "cannot switch to state 12; another operation (2) is in progress"
            )

    failed = await _run(handle, _records("only"), database_up=database_up)
    assert failed == []
    assert state["calls"] == 4  # three failures while the probe said down, then the success


async def test_an_error_while_the_database_answers_is_still_the_records_fault() -> None:
    probes = {"n": 0}

    async def database_up() -> bool:
        probes["n"] += 1
        return True

    async def handle(records: list[Record[Any]]) -> None:
        if any(r.event == "bad" for r in records):
            raise ValueError("cannot read this one")

    failed = await _run(handle, _records("a", "bad"), database_up=database_up)
    assert failed == [("bad", "ValueError('cannot read this one')")]
    assert probes["n"] == 2  # the batch's failure, then the bad record's alone


def test_dead_letters_name_the_journal_rows_of_their_record() -> None:
    from datetime import UTC, datetime
    from uuid import uuid4

    messages = [
        MessageEvent(
            event_id=uuid4(), bank_id="b", message_id=f"m{i}", content="hi", received_at=datetime.now(UTC)
        )
        for i in range(2)
    ]
    chunk = ChunkEvent(chunk_id=uuid4(), bank_id="b", messages=messages)
    assert journal_ids(messages[0]) == [messages[0].event_id]
    assert journal_ids(chunk) == [m.event_id for m in messages]
