"""The packaged model's encoder in ONNX Runtime gives torch's vectors, and its graph is
exported once then read from the cache."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tempr.inference.embeddings import LocalEmbedder, similar_length_passes
from tempr.settings import PACKAGED_EMBEDDING_MODEL

TEXTS = [
    "When did Caroline go to the LGBTQ support group?",
    "When did go to the support group?",
    "[8 May 2023] Melanie: I ran a charity race for mental health last Saturday, it was rewarding. " * 20,
    "ok",
    "  spaces around  ",
]


@pytest.fixture(scope="module")
def runtimes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, LocalEmbedder]:
    cache = tmp_path_factory.mktemp("xdg-cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("XDG_CACHE_HOME", str(cache))
        onnx = LocalEmbedder(PACKAGED_EMBEDDING_MODEL, runtime="onnx")
        graphs = list((cache / "tempr" / "onnx").glob("*.onnx"))
        again = LocalEmbedder(PACKAGED_EMBEDDING_MODEL, runtime="onnx")
    torch = LocalEmbedder(PACKAGED_EMBEDDING_MODEL, runtime="torch")
    return {"onnx": onnx, "again": again, "torch": torch, "graphs": graphs}  # type: ignore[dict-item]


def test_onnx_vectors_equal_torch_vectors_one_by_one_and_batched(runtimes: dict[str, LocalEmbedder]) -> None:
    assert runtimes["onnx"].runtime == "onnx" and runtimes["torch"].runtime == "torch"
    expected = runtimes["torch"].encode(TEXTS)
    batched = runtimes["onnx"].encode(TEXTS)  # padded to the longest (truncated at 256 tokens)
    alone = np.concatenate([runtimes["onnx"].encode([t]) for t in TEXTS])
    assert batched.dtype == np.float32 and batched.shape == expected.shape
    assert np.abs(batched - expected).max() < 1e-5
    assert np.abs(alone - expected).max() < 1e-5
    assert np.allclose(np.linalg.norm(batched, axis=1), 1.0, atol=1e-5)


def test_texts_of_many_lengths_get_their_own_vectors_in_their_own_order(
    runtimes: dict[str, LocalEmbedder],
) -> None:
    """Embedded shortest first a few at a time, each vector still lands in its text's row."""
    texts = [f"{'Melanie painted a lake at sunrise. ' * (i % 7)}Item {i} of the batch." for i in range(23)]
    texts[5], texts[17] = texts[17], texts[5]
    together = runtimes["onnx"].encode(texts)
    alone = np.concatenate([runtimes["onnx"].encode([t]) for t in texts])
    assert together.shape == (23, runtimes["onnx"].dimension)
    assert np.abs(together - alone).max() < 1e-5
    assert np.abs(together - runtimes["torch"].encode(texts)).max() < 1e-5


def test_passes_hold_texts_of_similar_length_and_at_most_a_batch() -> None:
    texts = ["a" * n for n in (10, 11, 12, 12, 20, 24, 25, 26, 100)]  # a new pass past 1.25x its first
    assert similar_length_passes(range(9), texts, 64) == [[0, 1, 2, 3], [4, 5, 6], [7], [8]]
    assert similar_length_passes(range(9), texts, 2) == [[0, 1], [2, 3], [4, 5], [6, 7], [8]]
    same = ["I bought 3 kites."] * 70  # a live stream's turns: one pass per batch, as before
    assert [len(p) for p in similar_length_passes(range(70), same, 64)] == [64, 6]
    assert similar_length_passes([], [], 64) == []


def test_the_graph_is_exported_once_and_reused(runtimes: dict[str, LocalEmbedder]) -> None:
    graphs: list[Path] = runtimes["graphs"]  # type: ignore[assignment]
    assert len(graphs) == 1 and graphs[0].stat().st_size > 10_000_000
    assert runtimes["again"].runtime == "onnx"
    assert list(graphs[0].parent.iterdir()) == graphs  # no second export, no partial file left


def test_an_empty_batch_is_an_empty_matrix(runtimes: dict[str, LocalEmbedder]) -> None:
    assert runtimes["onnx"].encode([]).shape == (0, runtimes["onnx"].dimension)


def test_concurrent_encodes_share_one_pass_and_get_their_own_vectors(
    runtimes: dict[str, LocalEmbedder],
) -> None:
    import asyncio

    embedder = runtimes["onnx"]
    asks = [[f"What did Melanie paint in {year}?", "What did paint?"] for year in range(2015, 2027)]
    calls: list[int] = []
    encode = embedder.encode

    def counting(texts: list[str]) -> np.ndarray:
        calls.append(len(texts))
        return encode(texts)

    async def all_at_once() -> list[np.ndarray]:
        return await asyncio.gather(*(embedder.aencode(a) for a in asks))

    embedder.encode = counting  # type: ignore[method-assign]
    try:
        together = asyncio.run(all_at_once())
    finally:
        del embedder.encode
    # The first alone, the eleven queued behind it in one pass.
    assert calls == [2, 22]
    for ask, vectors in zip(asks, together, strict=True):
        assert vectors.shape == (2, embedder.dimension)
        np.testing.assert_allclose(vectors, encode(ask), atol=1e-5)
    # A second event loop gets a coalescer of its own (asyncio locks belong to one loop).
    assert asyncio.run(all_at_once())[3].shape == (2, embedder.dimension)
