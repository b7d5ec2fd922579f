"""The `after` token wait: a recall blocks until its bank has materialized up to the token.

A token already reached costs one statement. The recalls still waiting share one poller per
pool, which asks about all of them in one statement a tick: each waiter polling on its own
made 2-3 statements per waiter every 75 ms, so a stream with many readers waiting on a busy
worker added load exactly when the worker was behind (docs/benchmarks.md, "Stop 23").
"""

from __future__ import annotations

import asyncio
import time
from typing import ClassVar

import asyncpg

from tempr.errors import ConsistencyTimeout, InvalidRequest
from tempr.schemas.api import ConsistencyToken
from tempr.store import consistency
from tempr.store.consistency import Wait

__all__ = ["POLL_INTERVAL_S", "wait_for_consistency"]

POLL_INTERVAL_S = 0.075


async def wait_for_consistency(pool: asyncpg.Pool, bank_id: str, token: str, *, timeout_s: float) -> float:
    """Block until every message of the bank up to the token is materialized; ms waited.

    A token beyond the bank's head was not issued yet (or was issued for another bank), so it
    is waited on and times out rather than trusted: how far other banks got never shows here.
    """
    try:
        seq, correction_seq = ConsistencyToken.decode_parts(token)
    except ValueError as exc:
        raise InvalidRequest(f"invalid 'after' token: {exc}") from None
    started = time.monotonic()
    wait = Wait(bank_id=bank_id, seq=seq, correction_seq=correction_seq)
    if not (await consistency.reached(pool, [wait]))[0]:
        poller = _Poller.of(pool)
        future = poller.add(wait)
        try:
            await asyncio.wait_for(future, timeout=timeout_s)
        except TimeoutError:
            raise ConsistencyTimeout(
                f"bank {bank_id!r} has not materialized up to {token!r} within {timeout_s:g}s; "
                "retry later or recall without 'after'"
            ) from None
        finally:
            poller.discard(wait, future)
    return round((time.monotonic() - started) * 1000, 2)


class _Poller:
    """The waits on one pool, checked together every `POLL_INTERVAL_S` while any is open.

    It exists only while something waits (it drops itself when the last wait ends), so the
    registry never outlives a pool or an event loop.
    """

    _running: ClassVar[dict[int, _Poller]] = {}

    def __init__(self, pool: asyncpg.Pool) -> None:
        self.pool = pool
        self.waits: dict[Wait, set[asyncio.Future[None]]] = {}
        self.task: asyncio.Task[None] | None = None

    @classmethod
    def of(cls, pool: asyncpg.Pool) -> _Poller:
        poller = cls._running.get(id(pool))
        if poller is None:
            poller = cls._running[id(pool)] = cls(pool)
        return poller

    def add(self, wait: Wait) -> asyncio.Future[None]:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.waits.setdefault(wait, set()).add(future)
        if self.task is None or self.task.done():
            self.task = asyncio.create_task(self._run(), name="tempr-consistency-poller")
        return future

    def discard(self, wait: Wait, future: asyncio.Future[None]) -> None:
        futures = self.waits.get(wait)
        if futures is not None:
            futures.discard(future)
            if not futures:
                del self.waits[wait]
        if not future.done():
            future.cancel()

    async def _run(self) -> None:
        try:
            while self.waits:
                await asyncio.sleep(POLL_INTERVAL_S)
                waits = list(self.waits)
                if not waits:
                    break
                try:
                    done = await consistency.reached(self.pool, waits)
                except Exception as exc:  # the waiters' requests fail as a direct query would
                    self._settle(waits, exc)
                    continue
                self._settle([w for w, yes in zip(waits, done, strict=True) if yes], None)
        finally:
            if _Poller._running.get(id(self.pool)) is self and not self.waits:
                del _Poller._running[id(self.pool)]

    def _settle(self, waits: list[Wait], error: Exception | None) -> None:
        for wait in waits:
            for future in self.waits.pop(wait, set()):
                if future.done():
                    continue
                if error is None:
                    future.set_result(None)
                else:
                    future.set_exception(error)
