"""Concurrent query embeddings share ONNX passes and come out as each would alone."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import numpy as np
import pytest

from tempr.inference.coalesce import Coalescer
from tempr.inference.embeddings import LocalEmbedder, get_embedder
from tempr.settings import PACKAGED_EMBEDDING_MODEL

QUESTIONS = [
    "When did Caroline go to the LGBTQ support group?",
    "What did Melanie paint recently?",
    "ok",
    "How many children does Melanie have, and what are their names and ages at the time?",
    "What fields would Caroline be likely to pursue in her education?",
    "When did Melanie run a charity race?",
]


@pytest.fixture(scope="module")
def embedder() -> LocalEmbedder:
    e = get_embedder(PACKAGED_EMBEDDING_MODEL, runtime="onnx")
    assert isinstance(e, LocalEmbedder) and e.runtime == "onnx"
    return e


def test_concurrent_calls_share_passes_and_match_each_alone(embedder: LocalEmbedder) -> None:
    passes: list[int] = []

    def counted(texts: Sequence[str]) -> np.ndarray:
        passes.append(len(texts))
        return embedder.encode(texts)

    calls = [[q, q.replace("Caroline", "").replace("Melanie", "")] for q in QUESTIONS] * 3

    async def run() -> list[np.ndarray]:
        coalescer = Coalescer(counted, max_texts=16)
        return await asyncio.gather(*(coalescer.encode(c) for c in calls))

    got = asyncio.run(run())
    assert sum(passes) == 2 * len(calls) and max(passes) <= 16
    assert len(passes) < len(calls)  # the calls that came while a pass ran went together
    for texts, vectors in zip(calls, got, strict=True):
        assert vectors.shape == (2, embedder.dimension)
        np.testing.assert_allclose(vectors, embedder.encode(texts), atol=1e-6)


def test_a_failed_pass_fails_its_callers_and_the_next_call_runs(embedder: LocalEmbedder) -> None:
    def fussy(texts: Sequence[str]) -> np.ndarray:
        if "boom" in texts:
            raise ValueError("bad text")
        return embedder.encode(texts)

    async def run() -> np.ndarray:
        coalescer = Coalescer(fussy, max_texts=8)
        with pytest.raises(ValueError, match="bad text"):
            await coalescer.encode(["boom"])
        return await coalescer.encode(["fine"])

    np.testing.assert_allclose(asyncio.run(run()), embedder.encode(["fine"]), atol=1e-6)


def test_the_embedder_coalesces_its_async_calls(embedder: LocalEmbedder) -> None:
    async def run() -> list[np.ndarray]:
        return await asyncio.gather(*(embedder.aencode([q]) for q in QUESTIONS))

    for q, vectors in zip(QUESTIONS, asyncio.run(run()), strict=True):
        np.testing.assert_allclose(vectors, embedder.encode([q]), atol=1e-6)
