"""Chunks extracted together (one spaCy pass) give the facts they give one by one; a chunk that
fails, or a caller that is cancelled, affects no other chunk."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from tempr.agents.extraction.local import extract_local, extract_local_many
from tempr.inference.coalesce import Coalescer
from tempr.schemas.events import ChunkEvent, ExtractedFact, MessageEvent
from tests.agents.test_local_extractor import _chunk, _conversation, _cut, _history, _messages

Job = tuple[ChunkEvent, Sequence[MessageEvent] | None]


def _jobs(size: int = 8) -> list[Job]:
    turns = _messages(_conversation(), 1)
    return [(_chunk(part), _history(turns, part)) for part in _cut(turns, size)]


def _dumped(facts: list[ExtractedFact]) -> list[dict]:
    return [f.model_dump() for f in facts]


def test_one_pass_over_many_chunks_gives_each_chunk_its_own_facts() -> None:
    jobs = _jobs()
    assert len(jobs) >= 3
    together = extract_local_many(jobs)
    assert [_dumped(f) for f in together] == [_dumped(extract_local(c, h)) for c, h in jobs]
    assert all(together)


class _Recording:
    """extract_local_many, recording the groups it was called with; fails on `poison`."""

    def __init__(self, poison: ChunkEvent | None = None) -> None:
        self.groups: list[list[ChunkEvent]] = []
        self.poison = poison

    def __call__(self, jobs: Sequence[Job]) -> list[list[ExtractedFact]]:
        self.groups.append([c for c, _ in jobs])
        if self.poison is not None and any(c is self.poison for c, _ in jobs):
            raise ValueError("poisoned chunk")
        return extract_local_many(jobs)


async def test_chunks_waiting_meanwhile_are_extracted_together() -> None:
    jobs = _jobs()
    recording = _Recording()
    coalescer = Coalescer(recording)
    found = await asyncio.gather(*(coalescer.run((c, h)) for c, h in jobs))
    assert [_dumped(f) for f in found] == [_dumped(extract_local(c, h)) for c, h in jobs]
    # The first goes alone, the rest queued behind it go in one pass.
    assert [len(g) for g in recording.groups] == [1, len(jobs) - 1]


async def test_a_failing_chunk_fails_only_its_own_caller() -> None:
    jobs = _jobs()
    poison = jobs[2][0]
    coalescer = Coalescer(_Recording(poison=poison))
    found = await asyncio.gather(*(coalescer.run((c, h)) for c, h in jobs), return_exceptions=True)
    for (chunk, history), result in zip(jobs, found, strict=True):
        if chunk is poison:
            assert isinstance(result, ValueError)
        else:
            assert isinstance(result, list)
            assert _dumped(result) == _dumped(extract_local(chunk, history))


async def test_a_cancelled_caller_strands_nobody() -> None:
    jobs = _jobs()
    recording = _Recording()
    coalescer = Coalescer(recording)
    tasks = [asyncio.create_task(coalescer.run((c, h))) for c, h in jobs]
    await asyncio.sleep(0)  # all queued; the first is extracting alone
    tasks[1].cancel()  # the one that would take the next turn
    done = await asyncio.gather(*tasks, return_exceptions=True)
    assert isinstance(done[1], asyncio.CancelledError)
    for i, ((chunk, history), result) in enumerate(zip(jobs, done, strict=True)):
        if i != 1:
            assert isinstance(result, list)
            assert _dumped(result) == _dumped(extract_local(chunk, history))
    assert not coalescer._waiting


async def test_cancelling_the_caller_whose_turn_it_is_hands_the_turn_on() -> None:
    jobs = _jobs()
    coalescer = Coalescer(_Recording())
    tasks = [asyncio.create_task(coalescer.run((c, h))) for c, h in jobs]
    await asyncio.sleep(0)
    tasks[0].cancel()  # its thread still runs; the others still get their facts
    done = await asyncio.gather(*tasks, return_exceptions=True)
    assert isinstance(done[0], asyncio.CancelledError)
    assert all(isinstance(r, list) for r in done[1:])
    assert [_dumped(r) for r in done[1:]] == [_dumped(extract_local(c, h)) for c, h in jobs[1:]]
