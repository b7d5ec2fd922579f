"""The remote model paths against a real HTTP server: `/v1/embeddings` and `/rerank`."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from tempr.inference.embeddings import EmbeddingServiceError, RemoteEmbedder, embedder_from_settings
from tempr.inference.rerank import RemoteReranker, RerankServiceError, get_reranker, reranker_from_settings
from tempr.recall_api.recall.rerank import rerank_scores
from tempr.settings import Settings
from tests.model_server import ModelServer, hashed_embedding


@pytest.fixture(scope="module")
def server() -> Iterator[ModelServer]:
    with ModelServer(dimension=768) as s:
        yield s


def test_remote_embedder_reads_its_dimension_and_normalizes(server: ModelServer) -> None:
    embedder = RemoteEmbedder("m768", server.base_url + "/v1", api_key="k", batch_size=2)
    assert embedder.dimension == 768
    server.requests.clear()
    texts = ["Caroline moved to Lisbon.", "Melanie paints.", "a", "b", "Caroline moved to Lisbon."]
    vectors = embedder.encode(texts)
    assert vectors.shape == (5, 768) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    # Ordered by the answer's `index` (the server answers reversed), batched by batch_size.
    expected = np.asarray(hashed_embedding(texts[1], 768))
    assert np.allclose(vectors[1], expected / np.linalg.norm(expected), atol=1e-5)
    assert np.allclose(vectors[0], vectors[4])
    assert [len(body["input"]) for _, body in server.requests] == [2, 2, 1]
    assert {body["model"] for _, body in server.requests} == {"m768"}


async def test_remote_embedder_async_and_empty(server: ModelServer) -> None:
    embedder = RemoteEmbedder("m768", server.base_url + "/v1")
    assert (await embedder.aencode([])).shape == (0, 768)
    got = await embedder.aencode(["one", "two"])
    assert np.allclose(got, embedder.encode(["one", "two"]))


def test_remote_embedder_failure_names_the_endpoint_and_status(server: ModelServer) -> None:
    embedder = RemoteEmbedder("m768", server.base_url + "/v1")
    server.fail_with = 503
    try:
        with pytest.raises(EmbeddingServiceError, match=r"/v1/embeddings answered 503"):
            embedder.encode(["x"])
    finally:
        server.fail_with = None


def test_settings_choose_the_remote_embedder(server: ModelServer) -> None:
    settings = Settings(embedding_base_url=server.base_url + "/v1", embedding_model="m768-settings")
    embedder = embedder_from_settings(settings)
    assert isinstance(embedder, RemoteEmbedder) and embedder.dimension == 768
    assert embedder_from_settings(settings) is embedder  # one per process
    assert embedder_from_settings(settings, "other").model_name == "other"


@pytest.mark.parametrize("shape", ["tei", "cohere"])
async def test_remote_reranker_reads_both_answer_shapes(shape: str) -> None:
    with ModelServer(rerank_shape=shape) as server:  # type: ignore[arg-type]
        reranker = RemoteReranker("rr", server.base_url, api_key="k")
        docs = ["Lisbon is sunny.", "Caroline moved to Lisbon in May.", "Nothing here."]
        scores = await reranker.ascore("Did Caroline move to Lisbon in May?", docs)
        assert scores[1] > scores[0] > scores[2] == 0.0  # in the documents' order, not the ranking's
        assert await reranker.ascore("q", []) == []
        _, body = server.requests[-1]
        assert body["model"] == "rr" and body["query"].startswith("Did Caroline")
        # Recall normalizes and names the method.
        normalized, method = await rerank_scores(reranker, "Did Caroline move to Lisbon in May?", docs)
        assert method == "rerank-endpoint:rr" and normalized == scores
        server.fail_with = 500
        with pytest.raises(RerankServiceError, match="answered 500"):
            await reranker.ascore("q", ["d"])


def test_settings_choose_the_reranker() -> None:
    assert reranker_from_settings(Settings()) is None
    remote = reranker_from_settings(Settings(reranker_model="rr", reranker_base_url="http://127.0.0.1:9"))
    assert isinstance(remote, RemoteReranker)
    local = get_reranker("some/cross-encoder", device="cuda")
    assert local is not None and local.method == "cross-encoder:some/cross-encoder"
    assert local.device == "cuda"  # type: ignore[attr-defined]  # not loaded: nothing runs on it


async def test_a_failing_model_endpoint_is_a_502() -> None:
    import httpx
    from fastapi import FastAPI

    from tempr.recall_api.errors import install_error_handlers

    app = FastAPI()
    install_error_handlers(app)

    @app.get("/rerank")
    async def rerank() -> None:
        raise RerankServiceError("rerank endpoint http://x/rerank answered 500: boom")

    @app.get("/embed")
    async def embed() -> None:
        raise EmbeddingServiceError("embedding endpoint http://x/v1/embeddings unreachable")

    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as client:
        for path in ("/rerank", "/embed"):
            answer = await client.get(path)
            assert answer.status_code == 502
            assert "endpoint http://x/" in answer.json()["detail"]
