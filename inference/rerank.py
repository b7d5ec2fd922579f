"""Cross-encoder reranking of recall candidates, with an RRF-rank fallback when no model is set.

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
from datetime import datetime
from functools import lru_cache
from typing import Any

from tempr.recall_api.recall.scoring import sigmoid_normalize, synthetic_scores, synthetic_scores_from_fused

__all__ = [
    "RERANK_BATCH_SIZE",
    "Reranker",
    "format_candidate",
    "get_reranker",
    "normalize_scores",
    "rerank_scores",
]

RERANK_BATCH_SIZE = 32


def format_candidate(text: str, when: datetime | None) -> str:
    """``"[June 5, 2023] text"``; undated facts go in as they are."""
    if when is None:
        return text
    return f"[{when:%B} {when.day}, {when.year}] {text}"


def normalize_scores(raw: Sequence[float]) -> list[float]:
    """Scores of one query's candidates in [0, 1]: kept if all already are, else sigmoid."""
    return sigmoid_normalize(raw)


class Reranker:
    """A lazily loaded CrossEncoder; predictions serialized (torch already uses every core)."""

    def __init__(self, model: str, *, batch_size: int = RERANK_BATCH_SIZE) -> None:
        self.model_name = model
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
def get_reranker(model: str | None) -> Reranker | None:
    """The process-wide reranker for ``model``; None when no model is configured."""
    return Reranker(model) if model else None


async def rerank_scores(
    reranker: Reranker | None,
    query: str,
    documents: Sequence[str],
    fused: Sequence[float] | None = None,
) -> tuple[list[float], str]:
    """Normalized relevance for rank-ordered documents, and how it was obtained.

    Without a reranker the fused (RRF) scores become synthetic scores over [0.1, 1.0], so
    the later multiplicative boosts still act on a meaningful base (by rank alone when the
    fused scores are not given).
    """
    if reranker is None:
        if fused is not None:
            return synthetic_scores_from_fused(fused), "synthetic"
        return synthetic_scores(len(documents)), "synthetic"
    raw = await reranker.ascore(query, documents)
    return normalize_scores(raw), f"cross-encoder:{reranker.model_name}"
