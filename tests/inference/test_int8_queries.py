"""Recall's questions may be embedded by an int8 copy of the model (TEMPR_QUERY_EMBEDDING_PRECISION):
close to the float vectors, built once and cached, never used for what is stored."""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
import pytest

from tempr.inference.embeddings import LocalEmbedder, embedder_from_settings
from tempr.settings import PACKAGED_EMBEDDING_MODEL, Settings

QUESTIONS = [
    "When did Caroline go to the LGBTQ support group?",
    "When did go to the support group?",
    "What food should Dana avoid?",
    "Which city did Melanie visit with her kids last summer, and what did they see there?",
]


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("xdg-cache")


@pytest.fixture(scope="module")
def int8(cache: Path) -> LocalEmbedder:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("XDG_CACHE_HOME", str(cache))
        return LocalEmbedder(PACKAGED_EMBEDDING_MODEL, query_precision="int8")


def _graphs(cache: Path) -> dict[str, Path]:
    return {p.name.split(".", 1)[1]: p for p in (cache / "tempr" / "onnx").iterdir()}


def test_questions_get_int8_vectors_close_to_the_float_ones(int8: LocalEmbedder) -> None:
    assert int8.query_precision == "int8"
    exact = int8.encode(QUESTIONS)
    queries = asyncio.run(int8.aencode_queries(QUESTIONS))
    assert queries.dtype == np.float32 and queries.shape == exact.shape
    assert np.allclose(np.linalg.norm(queries, axis=1), 1.0, atol=1e-5)
    cosine = (queries * exact).sum(axis=1)
    assert cosine.min() > 0.98
    assert np.abs(queries - exact).max() > 1e-3  # really another model, not the float one


def test_a_recalls_questions_run_in_one_pass_whatever_their_lengths(int8: LocalEmbedder) -> None:
    """int8 quantizes activations per pass, so a question's vector depends on its companions;
    a recall's texts keep the one pass they always had (stored texts are cut by length)."""
    texts = [QUESTIONS[3], QUESTIONS[2]]  # 83 and 28 characters: two passes if cut by length
    assert int8._query_onnx is not None
    together = int8._query_onnx.encode(texts)
    assert np.array_equal(int8.encode_queries(texts), together)
    apart = np.concatenate([int8._query_onnx.encode([t]) for t in texts])
    assert not np.array_equal(apart, together)  # the pass matters, which is why it is kept


def test_what_is_stored_stays_float(int8: LocalEmbedder) -> None:
    stored = asyncio.run(int8.aencode(QUESTIONS))
    assert np.abs(stored - int8.encode(QUESTIONS)).max() < 1e-6
    float_only = LocalEmbedder(PACKAGED_EMBEDDING_MODEL)
    assert float_only.query_precision == "float32"
    assert np.abs(asyncio.run(float_only.aencode_queries(QUESTIONS)) - stored).max() < 1e-5


def test_the_int8_graph_is_built_once_and_reused(
    int8: LocalEmbedder, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    graphs = _graphs(cache)
    assert set(graphs) == {"onnx", "int8.onnx"}  # no partial file left
    assert graphs["int8.onnx"].stat().st_size < graphs["onnx"].stat().st_size / 3
    built = graphs["int8.onnx"].stat().st_mtime_ns
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    again = LocalEmbedder(PACKAGED_EMBEDDING_MODEL, query_precision="int8")
    assert again.query_precision == "int8"
    assert graphs["int8.onnx"].stat().st_mtime_ns == built


def test_an_unreadable_int8_graph_leaves_questions_in_float(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    graphs = _graphs(cache)
    broken = tmp_path / "tempr" / "onnx"
    broken.mkdir(parents=True)
    (broken / graphs["onnx"].name).write_bytes(graphs["onnx"].read_bytes())
    (broken / graphs["int8.onnx"].name).write_bytes(b"not a graph")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    embedder = LocalEmbedder(PACKAGED_EMBEDDING_MODEL, query_precision="int8")
    assert embedder.query_precision == "float32"
    assert "queries embedded in float" in caplog.text
    queries = asyncio.run(embedder.aencode_queries(QUESTIONS))
    assert np.abs(queries - embedder.encode(QUESTIONS)).max() < 1e-6


def test_the_api_embeds_questions_in_int8_and_the_worker_does_not(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    settings = Settings()
    assert settings.query_embedding_precision == "int8"  # the service's default
    api = embedder_from_settings(settings)
    worker = embedder_from_settings(settings, queries=False)
    assert isinstance(api, LocalEmbedder) and isinstance(worker, LocalEmbedder)
    assert (api.query_precision, worker.query_precision) == ("int8", "float32")
    as_asked = Settings(query_embedding_precision="float32")
    assert embedder_from_settings(as_asked).query_precision == "float32"  # type: ignore[attr-defined]
