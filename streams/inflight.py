"""The poison counter: which crashes count against a record.

A record is redelivered for many reasons that are not its fault: a consumer-group rebalance,
a clean restart of the worker or of `tempr up`, a crash caused by another record. Counting
deliveries would park a good message after a few of those. So the counter counts only crashes
the record can be blamed for:

- when a stage starts a record, the journal rows it covers are marked as in flight in this
  worker incarnation, and the marks are cleared when the stage is done with it (processed or
  dead-lettered) and, all at once, when the worker stops cleanly. A mark therefore survives
  only a crash (kill -9, OOM, a hang ended by a kill) while the record was in flight.
- a crash counts against a record only if the mark it left says it ran alone: no other
  record of any stage of this worker was in flight meanwhile (`Gate`). A crash while it shared
  the worker is no one's fault yet; a record in flight at two such crashes is a suspect and
  runs alone from then on (one crash, a kill -9 with hundreds of records in flight, costs no
  serial runs), so the record that keeps killing the worker is the one counted. After
  TEMPR_MAX_ATTEMPTS counted crashes it is parked in the dead letters instead of being run.

Records of an ordinary failure or of a record past its time budget are dead-lettered at once by
the `BatchRunner`; this counter is for what kills the whole process. A live worker that loses
a partition mid-record to another worker (a rebalance, not a crash) finishes and clears it, so
the other worker may see a mark that is not a crash: if that record was running alone (a
suspect already), it is counted once; otherwise it counts as a shared crash.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any
from uuid import UUID

import asyncpg

from tempr.store import inflight

__all__ = ["CrashGuard", "Gate"]

log = logging.getLogger(__name__)

Run = Callable[[list[Any]], Awaitable[None]]
Fail = Callable[[Any, str], Awaitable[None]]
Ids = Callable[[Any], Sequence[UUID]]


class Gate:
    """Ordinary runs share the worker; a suspect's run has it to itself (a writer-preferring
    readers-writer lock over every stage of the process)."""

    def __init__(self) -> None:
        self._cond = asyncio.Condition()
        self._shared = 0
        self._exclusive = False
        self._waiting_exclusive = 0

    @asynccontextmanager
    async def shared(self) -> AsyncIterator[None]:
        async with self._cond:
            await self._cond.wait_for(lambda: not self._exclusive and not self._waiting_exclusive)
            self._shared += 1
        try:
            yield
        finally:
            async with self._cond:
                self._shared -= 1
                self._cond.notify_all()

    @asynccontextmanager
    async def exclusive(self) -> AsyncIterator[None]:
        async with self._cond:
            self._waiting_exclusive += 1
            try:
                await self._cond.wait_for(lambda: not self._exclusive and self._shared == 0)
            finally:
                self._waiting_exclusive -= 1
            self._exclusive = True
        try:
            yield
        finally:
            async with self._cond:
                self._exclusive = False
                self._cond.notify_all()


class CrashGuard:
    """One per worker process: marks what is in flight, counts and parks (see the module)."""

    def __init__(self, max_attempts: int, worker: str | None = None, *, clear_every_s: float = 0.2) -> None:
        self.max_attempts = max_attempts
        # A new name per process start: a mark of an earlier run of the same pid is a crash.
        name = worker or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.worker = f"{name}/"  # marks are `<worker>/<stage>`: a stage clears only its own
        self.gate = Gate()
        self.clear_every_s = clear_every_s
        self._closed = False
        self._to_clear: dict[str, set[UUID]] = {}
        self._clearing: asyncio.Task[None] | None = None

    async def run(
        self, pool: asyncpg.Pool, stage: str, records: list[Any], ids_of: Ids, run: Run, fail: Fail
    ) -> None:
        ids = {record_id for record in records for record_id in ids_of(record)}
        if not ids or self._closed:
            async with self.gate.shared():
                await run(records)
            return
        mark = self.worker + stage
        leftovers = await self._safely(inflight.begin(pool, list(ids), self.worker, mark), default=[])
        if not leftovers:
            await self._shared_run(pool, mark, records, ids, run)
            return
        crashes = {left.id: left.crashes for left in leftovers}
        isolate = {left.id for left in leftovers if left.alone or left.crashes_shared >= 2}
        suspects, ordinary = [], []
        for record in records:
            counted = max((crashes.get(i, 0) for i in ids_of(record)), default=0)
            if counted >= self.max_attempts:
                await fail(
                    record,
                    f"the worker died {counted} times while processing it alone "
                    f"(TEMPR_MAX_ATTEMPTS={self.max_attempts}); parked",
                )
                await self._safely(inflight.clear(pool, list(ids_of(record)), mark))
            elif any(i in isolate for i in ids_of(record)):
                suspects.append(record)
            else:
                ordinary.append(record)
        if suspects:
            log.warning(
                "%d record(s) were in flight at crashes of their worker: each runs alone", len(suspects)
            )
        if ordinary:
            await self._shared_run(pool, mark, ordinary, {i for r in ordinary for i in ids_of(r)}, run)
        for record in suspects:
            record_ids = list(ids_of(record))
            async with self.gate.exclusive():
                await self._safely(inflight.mark_alone(pool, record_ids, mark))
                try:
                    await run([record])
                finally:
                    # At once: a mark left saying "alone" would count a crash against it.
                    await self._safely(inflight.clear(pool, record_ids, mark))

    async def _shared_run(
        self, pool: asyncpg.Pool, mark: str, records: list[Any], ids: set[UUID], run: Run
    ) -> None:
        # `begin` marked them already (not alone).
        try:
            async with self.gate.shared():
                await run(records)
        finally:
            self._clear_soon(pool, mark, ids)

    def _clear_soon(self, pool: asyncpg.Pool, mark: str, ids: set[UUID]) -> None:
        """Shared marks are cleared in one statement every `clear_every_s`, not one per batch
        (the segmenter's batches are single messages): a crash in between only makes records
        that had finished look like they shared a crash, which costs them nothing."""
        self._to_clear.setdefault(mark, set()).update(ids)
        if self._clearing is None or self._clearing.done():
            self._clearing = asyncio.create_task(self._clear_pending(pool))

    async def _clear_pending(self, pool: asyncpg.Pool) -> None:
        while self._to_clear:
            await asyncio.sleep(self.clear_every_s)
            batch, self._to_clear = self._to_clear, {}
            for mark, ids in batch.items():
                await self._safely(inflight.clear(pool, list(ids), mark))

    async def close(self, pool: asyncpg.Pool) -> None:
        """A clean stop: clear every mark of this worker (nothing it had in flight was that
        record's fault) and start no more marking."""
        self._closed = True
        if self._clearing is not None:
            self._clearing.cancel()
        self._to_clear.clear()
        await self._safely(inflight.clear_worker(pool, self.worker))

    async def _safely(self, op: Awaitable[Any], default: Any = None) -> Any:
        # The marks are evidence, not the work: a database hiccup here must not fail a record
        # (the stage itself waits out an outage).
        try:
            return await op
        except Exception as exc:
            log.warning("in-flight marks not updated: %r", exc)
            return default
