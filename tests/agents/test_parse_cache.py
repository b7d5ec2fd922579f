"""The extractor's parse cache: a live conversation's turns are parsed once, facts unchanged."""

from __future__ import annotations

from collections.abc import Sequence

from tempr.agents.extraction.local import ParseCache, _plan, extract_local, extract_local_many
from tempr.schemas.events import ChunkEvent, ExtractedFact, MessageEvent
from tests.agents.test_local_extractor import _chunk, _conversation, _cut, _history, _messages

Job = tuple[ChunkEvent, Sequence[MessageEvent] | None]


def _live_jobs() -> list[Job]:
    """One turn per chunk, as a live stream arrives, each with its journaled history."""
    turns = _messages(_conversation(), 1)
    return [(_chunk(part), _history(turns, part)) for part in _cut(turns, 1)]


def _dumped(facts: list[ExtractedFact]) -> list[dict]:
    return [f.model_dump() for f in facts]


def test_a_live_conversation_is_parsed_once_per_turn_with_the_same_facts() -> None:
    jobs = _live_jobs()
    wanted = [m.content for chunk, history in jobs for m, _ in _plan(chunk, history).wanted.values()]
    distinct = set(wanted)
    # The fixture really reads turns twice (as themselves, then as what the reply answers).
    assert len(wanted) > len(distinct) + 3
    cache = ParseCache(4096)
    for chunk, history in jobs:  # chunk by chunk, as the stream hands them over
        [found] = extract_local_many([(chunk, history)], parses=cache)
        assert _dumped(found) == _dumped(extract_local(chunk, history))
    assert cache.parsed == len(distinct)


def test_the_cache_keeps_only_its_size_and_still_gives_the_same_facts() -> None:
    jobs = _live_jobs()
    small, large = ParseCache(2), ParseCache(4096)
    for cache in (small, large):
        for chunk, history in [*jobs, jobs[0]]:  # the first chunk again, once the rest went by
            [found] = extract_local_many([(chunk, history)], parses=cache)
            assert _dumped(found) == _dumped(extract_local(chunk, history))
            assert len(cache) <= cache.size
    # The large cache still held the first chunk's parse; the small one had evicted it.
    assert small.parsed > large.parsed
