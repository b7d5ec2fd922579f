"""Acks of a stage that finishes its records out of order, handed to Faust in order.

The segmenter holds a turn until its chunk is sent, while later turns of other
conversations on the same partition are chunked and acked first. Faust's commit
(`Consumer._new_offset`, faust-streaming 0.15) commits the first run of acked offsets and
checks only that the run starts *at most one* past the committed offset, and not at all
before a partition's first commit. So with one turn held at the head of a partition, the
acks behind it move the committed offset past it; if the worker then dies, the turn existed
only in its memory and is lost to the group (seen once in the two-worker kill test: one
turn of 1,200, recovered by nothing because the journal sweeper was off).

Passing an ack on only once every earlier record of its partition is acked too keeps each
acked offset below every unfinished one, which is all Faust's commit needs to be right.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any

__all__ = ["InOrderAcks"]


@dataclass
class _Held:
    event: Any
    done: bool = False


class InOrderAcks:
    """Stands where the stream does for `Record.ack`: `arrived` in delivery order, then `ack`
    in any order; the stream sees the acks of each partition in delivery order."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self._queues: dict[Any, deque[_Held]] = {}
        self._held: dict[int, _Held] = {}

    def arrived(self, event: Any) -> None:
        held = _Held(event)
        self._queues.setdefault(event.message.tp, deque()).append(held)
        self._held[id(event)] = held

    async def ack(self, event: Any) -> None:
        held = self._held.get(id(event))
        if held is None or held.event is not event:
            await self._stream.ack(event)  # not tracked here: nothing to wait for
            return
        held.done = True
        queue = self._queues[event.message.tp]
        while queue and queue[0].done:
            first = queue.popleft()
            del self._held[id(first.event)]
            await self._stream.ack(first.event)
