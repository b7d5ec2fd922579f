"""Admission: at most N recalls run at once per API process; the rest wait in arrival order.

Under load every recall shares one event loop and two cores. Run all at once, each advances a
little per turn of the loop and a costly question finishes last by a wide margin (the p95 is
many times its own cost); admitted a few at a time, each waits for those before it and then
runs at full speed, so waits even out while the cores stay as busy.
"""

from __future__ import annotations

import asyncio
from types import TracebackType

__all__ = ["Admission"]


class Admission:
    """`async with admission:` around one recall; a limit of 0 admits everything at once."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._slots = asyncio.Semaphore(limit) if limit > 0 else None
        self.waiting = 0

    async def __aenter__(self) -> None:
        if self._slots is None:
            return
        self.waiting += 1
        try:
            await self._slots.acquire()  # asyncio wakes waiters first come, first served
        finally:
            self.waiting -= 1

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._slots is not None:
            self._slots.release()
