"""Calls that wait for a one-at-a-time batch function are run together, in one call.

A model (spaCy's pipeline, the embedding model) runs one call at a time, and a batch costs less
per item than the same items one by one. Whoever takes the turn runs every item that is waiting
by then: the first item goes alone (its answer comes back early), the ones that queued behind it
go together. The extractor sees tens of texts per spaCy pass instead of a chunk's eight (~15 %
less CPU per text on conv-26); the API's concurrent recalls embed their questions in one pass.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

__all__ = ["Coalescer"]

T = TypeVar("T")
R = TypeVar("R")


@dataclass(eq=False)
class _Job(Generic[T, R]):
    item: T
    done: asyncio.Future[R] = field(default_factory=lambda: asyncio.get_running_loop().create_future())


class Coalescer(Generic[T, R]):
    """`await run(item)`: `run_many([..., item, ...])`'s answer for `item`, computed in a
    thread together with whatever else waits. `run_many` answers each item in order."""

    def __init__(self, run_many: Callable[[Sequence[T]], list[R]]) -> None:
        self._run_many = run_many
        self._waiting: list[_Job[T, R]] = []
        self._turn = asyncio.Lock()
        # Held inside the thread: a cancelled caller leaves its thread running, and the next
        # one must not enter the model beside it.
        self._in_thread = threading.Lock()

    def _run(self, jobs: Sequence[_Job[T, R]]) -> list[R]:
        with self._in_thread:
            return self._run_many([j.item for j in jobs])

    async def run(self, item: T) -> R:
        job: _Job[T, R] = _Job(item)
        self._waiting.append(job)
        try:
            async with self._turn:
                if not job.done.done():
                    await self._take_turn(job)
            return job.done.result()
        finally:
            if job in self._waiting:  # cancelled while waiting: nobody runs it now
                self._waiting.remove(job)

    async def _take_turn(self, job: _Job[T, R]) -> None:
        jobs, self._waiting = self._waiting, []
        try:
            found = await asyncio.to_thread(self._run, jobs)
        except Exception:
            if len(jobs) == 1:
                raise
            # The others are run again by their own callers, and this one alone: an item that
            # fails the group fails only its own caller.
            self._waiting[:0] = [j for j in jobs if j is not job]
            jobs = [job]
            found = await asyncio.to_thread(self._run, jobs)
        except BaseException:  # cancelled: nobody is stranded
            self._waiting[:0] = [j for j in jobs if j is not job]
            raise
        for each, answer in zip(jobs, found, strict=True):
            if not each.done.done():
                each.done.set_result(answer)
