"""The poison counter counts crashes a record causes, not its deliveries (issue 15).

On the real database. A good record redelivered more than TEMPR_MAX_ATTEMPTS times after clean
stops (a worker shut down or restarted with it in flight) keeps its budget and is processed; a
record that kills its worker process (a real SIGKILL, in a process of its own) is parked after
TEMPR_MAX_ATTEMPTS crashes, while the good record that shared the first crash's batch is
processed.
"""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any
from uuid import UUID

import asyncpg
import pytest

from tempr.streams.inflight import CrashGuard
from tempr.streams.runtime import Supervisor

pytestmark = pytest.mark.integration

MAX_ATTEMPTS = 3
REPO = Path(__file__).resolve().parents[2]


async def _journal(db: asyncpg.Pool, count: int) -> list[UUID]:
    """Journal rows as the API writes them, stamped materialized so the stack's own sweeper
    leaves them alone (the counter does not look at that stamp)."""
    ids = [uuid.uuid4() for _ in range(count)]
    for row_id in ids:
        await db.execute(
            "INSERT INTO messages (id, bank_id, message_id, payload, processed_at)"
            " VALUES ($1, 'poison-counter', $2, '{}'::jsonb, now())",
            row_id,
            str(row_id),
        )
    return ids


async def _row(db: asyncpg.Pool, row_id: UUID) -> asyncpg.Record:
    return await db.fetchrow(
        "SELECT in_flight_by, in_flight_alone, crashes, crashes_shared FROM messages WHERE id = $1", row_id
    )


async def test_a_good_record_in_flight_at_clean_stops_keeps_its_budget(db: asyncpg.Pool) -> None:
    (good,) = await _journal(db, 1)
    started = asyncio.Event()

    async def held(records: list[UUID]) -> None:
        started.set()
        await asyncio.sleep(3600)  # in flight until the worker stops

    async def fail(record: UUID, reason: str) -> None:
        raise AssertionError(f"a good record was dead-lettered: {reason}")

    for delivery in range(MAX_ATTEMPTS + 2):
        guard = CrashGuard(MAX_ATTEMPTS, worker=f"clean-{delivery}")
        started.clear()
        task = asyncio.create_task(guard.run(db, "stage", [good], lambda r: [r], held, fail))
        await asyncio.wait_for(started.wait(), 30)
        assert (await _row(db, good))["in_flight_by"] == f"clean-{delivery}/stage"
        # A shutdown cancels the stage (Faust stops its agents) and closes the guard.
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await guard.close(db)
        assert (await _row(db, good))["in_flight_by"] is None

    done: list[UUID] = []

    async def work(records: list[UUID]) -> None:
        done.extend(records)

    await CrashGuard(MAX_ATTEMPTS, worker="clean-last").run(db, "stage", [good], lambda r: [r], work, fail)
    assert done == [good]
    await asyncio.sleep(1)  # finished marks are cleared in batches
    row = await _row(db, good)
    assert row["crashes"] == 0 and row["in_flight_by"] is None


def _deliver(stack: Supervisor, poison: UUID, ids: list[UUID]) -> tuple[int, dict[str, Any]]:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.streams.crash_worker",
            stack.settings.database_url or "",
            str(MAX_ATTEMPTS),
            str(poison),
            *map(str, ids),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return proc.returncode, json.loads(proc.stdout) if proc.returncode == 0 else {}


async def test_a_record_that_kills_its_worker_is_parked_and_its_batch_mate_is_not(
    stack: Supervisor, db: asyncpg.Pool
) -> None:
    good, poison = await _journal(db, 2)

    # Two deliveries of both in one batch; the worker dies each time. Nobody can tell whose
    # fault it was: no crash is counted.
    for _ in range(2):
        code, _ = await asyncio.to_thread(_deliver, stack, poison, [good, poison])
        assert code == -signal.SIGKILL
        assert [(await _row(db, i))["crashes"] for i in (good, poison)] == [0, 0]

    # In flight at two crashes, each runs alone. The good one is processed; the poison kills the
    # worker alone.
    code, _ = await asyncio.to_thread(_deliver, stack, poison, [good, poison])
    assert code == -signal.SIGKILL
    good_row = await _row(db, good)
    assert good_row["crashes_shared"] == 2
    assert good_row["crashes"] == 0 and good_row["in_flight_by"] is None  # processed, mark cleared
    poison_row = await _row(db, poison)
    assert poison_row["in_flight_alone"] and poison_row["crashes"] == 0

    # Each further delivery counts the previous crash against it, until the budget is spent.
    for crashes in range(1, MAX_ATTEMPTS):
        code, _ = await asyncio.to_thread(_deliver, stack, poison, [poison])
        assert code == -signal.SIGKILL
        assert (await _row(db, poison))["crashes"] == crashes

    code, result = await asyncio.to_thread(_deliver, stack, poison, [good, poison])
    assert code == 0, "the poison ran again after its budget was spent"
    assert result["done"] == [str(good)]
    assert f"died {MAX_ATTEMPTS} times" in result["failed"][str(poison)]
    assert (await _row(db, poison))["in_flight_by"] is None
    assert (await _row(db, good))["crashes"] == 0
