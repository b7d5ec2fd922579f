"""Rerankers: a small protocol, a local sentence-transformers CrossEncoder and a remote
`/rerank` endpoint (TEI's or Cohere's shape), chosen by settings.

A local model (``settings.reranker_model``, a CrossEncoder name or path) is loaded on first
use, not at import or startup, and scored in a worker thread so the event loop keeps serving.
Scores come back raw; recall (`tempr.recall_api.recall.rerank`) shows each candidate with its
readable date in front and normalizes the scores per query.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Protocol

import httpx

from tempr.errors import UpstreamModelError

if TYPE_CHECKING:
    from tempr.settings import Settings

__all__ = [
    "RERANK_BATCH_SIZE",
    "CrossEncoderReranker",
    "RemoteReranker",
    "RerankServiceError",
    "Reranker",
    "get_reranker",
    "reranker_from_settings",
]

RERANK_BATCH_SIZE = 32


class Reranker(Protocol):
    """Scores documents against a query; higher is more relevant. Raw scores: recall
    normalizes them per query (`tempr.recall_api.recall.rerank`)."""

    method: str

    async def ascore(self, query: str, documents: Sequence[str]) -> list[float]: ...


class CrossEncoderReranker:
    """A lazily loaded CrossEncoder; predictions serialized (torch already uses every core)."""

    def __init__(self, model: str, *, batch_size: int = RERANK_BATCH_SIZE, device: str = "cpu") -> None:
        self.model_name = model
        self.device = device
        self.method = f"cross-encoder:{model}"
        self.batch_size = batch_size
        self._model: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        if self._model is None:
            from sentence_transformers import CrossEncoder

            if os.path.isdir(self.model_name):
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
            self._model = CrossEncoder(self.model_name, device=self.device)
        return self._model

    def score(self, query: str, documents: Sequence[str]) -> list[float]:
        """Raw model scores (logits for most cross-encoders), one per document."""
        if not documents:
            return []
        with self._lock:
            model = self._load()
            import torch

            # Raw logits out; normalize_scores decides on sigmoid for the whole query at once.
            raw = model.predict(
                [(query, doc) for doc in documents],
                batch_size=self.batch_size,
                show_progress_bar=False,
                convert_to_numpy=True,
                activation_fn=torch.nn.Identity(),
            )
        return [float(x) for x in raw]

    async def ascore(self, query: str, documents: Sequence[str]) -> list[float]:
        return await asyncio.to_thread(self.score, query, documents)


class RerankServiceError(UpstreamModelError):
    """The rerank endpoint failed or answered something that is not scores."""


class RemoteReranker:
    """`POST {base_url}/rerank`: TEI (`http://host:8080`) or Cohere-style (`.../v1`).

    The body carries the documents as both `texts` (TEI) and `documents` (Cohere, Jina, vLLM);
    the answer is read in either shape: a list of `{index, score}` or `{"results": [{index,
    relevance_score}]}`.
    """

    def __init__(
        self, model: str, base_url: str, *, api_key: str | None = None, timeout_s: float = 60.0
    ) -> None:
        self.model_name = model
        self.method = f"rerank-endpoint:{model}"
        self._url = base_url.rstrip("/") + "/rerank"
        self._client = httpx.AsyncClient(
            timeout=timeout_s, headers={"authorization": f"Bearer {api_key}"} if api_key else {}
        )

    async def ascore(self, query: str, documents: Sequence[str]) -> list[float]:
        if not documents:
            return []
        docs = list(documents)
        body = {
            "model": self.model_name,
            "query": query,
            "texts": docs,
            "documents": docs,
            "top_n": len(docs),
        }
        try:
            response = await self._client.post(self._url, json=body)
        except httpx.HTTPError as exc:
            raise RerankServiceError(f"rerank endpoint {self._url} unreachable: {exc!r}") from exc
        if response.status_code != 200:
            raise RerankServiceError(
                f"rerank endpoint {self._url} answered {response.status_code}: {response.text[:300]}"
            )
        try:
            payload = response.json()
            items = payload["results"] if isinstance(payload, dict) else payload
            scores = {int(i["index"]): float(i.get("relevance_score", i.get("score"))) for i in items}
        except (ValueError, KeyError, TypeError) as exc:
            raise RerankServiceError(f"rerank endpoint {self._url} sent no scores: {exc!r}") from exc
        if sorted(scores) != list(range(len(docs))):
            raise RerankServiceError(
                f"rerank endpoint {self._url}: scores for {len(scores)} of {len(docs)} documents"
            )
        return [scores[i] for i in range(len(docs))]


@lru_cache(maxsize=4)
def get_reranker(
    model: str | None,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    device: str = "cpu",
    timeout_s: float = 60.0,
) -> Reranker | None:
    """The process-wide reranker for ``model`` (remote when `base_url` is given); None when no
    model is configured. Nothing is loaded or called here."""
    if not model:
        return None
    if base_url:
        return RemoteReranker(model, base_url, api_key=api_key, timeout_s=timeout_s)
    return CrossEncoderReranker(model, device=device)


def reranker_from_settings(settings: Settings) -> Reranker | None:
    key = settings.reranker_api_key
    return get_reranker(
        settings.reranker_model,
        base_url=settings.reranker_base_url,
        api_key=key.get_secret_value() if key else None,
        device=settings.model_device,
        timeout_s=settings.model_timeout_s,
    )
