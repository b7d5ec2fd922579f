"""Rerankers: a small protocol, and a local sentence-transformers CrossEncoder.

The model (``settings.reranker_model``, a sentence-transformers CrossEncoder name or path) is
loaded on first use, not at import or startup, and scored in a worker thread so the event
loop keeps serving. Each candidate is shown to the model with its readable date in front, so
questions like "what happened in June?" can be judged on the pair.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Sequence
from functools import lru_cache
from typing import Any, Protocol

__all__ = ["RERANK_BATCH_SIZE", "CrossEncoderReranker", "Reranker", "get_reranker"]

RERANK_BATCH_SIZE = 32


class Reranker(Protocol):
    """Scores documents against a query; higher is more relevant. Raw scores: recall
    normalizes them per query (`tempr.recall_api.recall.rerank`)."""

    method: str

    async def ascore(self, query: str, documents: Sequence[str]) -> list[float]: ...


class CrossEncoderReranker:
    """A lazily loaded CrossEncoder; predictions serialized (torch already uses every core)."""

    def __init__(self, model: str, *, batch_size: int = RERANK_BATCH_SIZE) -> None:
        self.model_name = model
        self.method = f"cross-encoder:{model}"
        self.batch_size = batch_size
        self._model: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        if self._model is None:
            from sentence_transformers import CrossEncoder

            if os.path.isdir(self.model_name):
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
            self._model = CrossEncoder(self.model_name, device="cpu")
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


@lru_cache(maxsize=4)
def get_reranker(model: str | None) -> CrossEncoderReranker | None:
    """The process-wide reranker for ``model``; None when no model is configured."""
    return CrossEncoderReranker(model) if model else None
