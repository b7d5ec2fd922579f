"""The extractor stage's overlap of extraction and embedding, on real conv-26 turns with the
real local extractor and the packaged embedding model."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import numpy as np
import pytest

from tempr.agents.extract_facts import embedding_text, extract_and_embed
from tempr.agents.extraction.local import extract_local
from tempr.inference.embeddings import get_embedder
from tempr.schemas.events import ChunkEvent, ExtractedFact, FactsEvent
from tempr.settings import PACKAGED_EMBEDDING_MODEL
from tests.agents.test_local_extractor import _chunk, _conversation, _messages


class CountingEmbedder:
    """The real model; remembers how many texts each call sent."""

    def __init__(self) -> None:
        self.model = get_embedder(PACKAGED_EMBEDDING_MODEL)
        self.calls: list[int] = []

    async def aencode(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(len(texts))
        return await self.model.aencode(texts)


def _chunks() -> list[ChunkEvent]:
    turns = _messages(_conversation(), 1)
    return [_chunk(turns[i : i + 3]) for i in range(0, len(turns), 3)]


async def _slow_last_first(chunks: list[ChunkEvent], chunk: ChunkEvent) -> list[ExtractedFact]:
    """The local extractor, finishing later chunks first (as LLM calls in flight may)."""
    await asyncio.sleep(0.02 * (len(chunks) - chunks.index(chunk)))
    return extract_local(chunk, None)


async def test_chunks_are_emitted_in_order_with_every_fact_embedded_in_shared_calls() -> None:
    chunks = _chunks()
    embedder = CountingEmbedder()
    emitted: list[FactsEvent] = []

    async def emit(event: FactsEvent) -> None:
        emitted.append(event)

    async def extract(chunk: ChunkEvent) -> list[ExtractedFact]:
        return await _slow_last_first(chunks, chunk)

    await extract_and_embed(chunks, extract, embedder, emit, group_facts=64)

    assert [e.chunk_id for e in emitted] == [c.chunk_id for c in chunks]
    facts = [f for e in emitted for f in e.facts]
    assert len(facts) >= len(chunks)
    alone = embedder.model.encode([embedding_text(f) for f in facts])
    got = np.asarray([f.embedding for f in facts], dtype=np.float32)
    assert np.allclose(got, alone, atol=1e-4)
    # Chunks extracted while the model was busy share its next call.
    assert sum(embedder.calls) == len(facts) and len(embedder.calls) < len(chunks)


async def test_a_failed_extraction_raises_its_own_error_and_nothing_hangs() -> None:
    chunks = _chunks()
    emitted: list[FactsEvent] = []

    async def emit(event: FactsEvent) -> None:
        emitted.append(event)

    async def extract(chunk: ChunkEvent) -> list[ExtractedFact]:
        if chunk is chunks[2]:
            raise ConnectionError("database gone")
        return await _slow_last_first(chunks, chunk)

    with pytest.raises(ConnectionError, match="database gone"):
        await asyncio.wait_for(
            extract_and_embed(chunks, extract, CountingEmbedder(), emit, group_facts=64), timeout=60
        )
    assert chunks[2].chunk_id not in {e.chunk_id for e in emitted}


async def test_groups_hold_whole_chunks_up_to_one_model_batch_and_chunks_leave_after_their_group() -> None:
    chunks = _chunks()
    embedder = CountingEmbedder()
    log: list[str] = []
    emitted: list[FactsEvent] = []

    async def emit(event: FactsEvent) -> None:
        log.append("emit")
        emitted.append(event)

    async def extract(chunk: ChunkEvent) -> list[ExtractedFact]:
        return extract_local(chunk, None)  # all ready at once: groups are as full as allowed

    async def counting(texts: Sequence[str]) -> np.ndarray:
        log.append("embed")
        return await CountingEmbedder.aencode(embedder, texts)

    embedder.aencode = counting  # type: ignore[method-assign]
    await extract_and_embed(chunks, extract, embedder, emit, group_facts=8)

    sizes = [len(e.facts) for e in emitted]
    assert [e.chunk_id for e in emitted] == [c.chunk_id for c in chunks]
    assert sum(embedder.calls) == sum(sizes)
    # Every chunk was ready before the model's first call: groups are whole chunks in order,
    # as many as fit in 8 facts, a bigger chunk alone.
    expected: list[int] = []
    for n in sizes:
        if expected and expected[-1] + n <= 8:
            expected[-1] += n
        else:
            expected.append(n)
    assert embedder.calls == expected and len(expected) > 1
    # The first chunks move on while later groups still wait for the model.
    assert log.index("emit") < len(log) - 1 - log[::-1].index("embed")
