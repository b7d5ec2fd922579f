"""Concurrent encode calls share forward passes.

A process encodes one batch at a time (LocalEmbedder's lock). Under concurrent recalls each
question's two texts queued behind every other's pass; here the texts that arrive while a
pass runs wait for the next one and go in it together, up to ``max_texts``. A lone call runs
at once, as before. One pass over eight questions costs far less than eight passes, and each
row comes out as it would alone (the attention mask keeps the padding out; tested).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

import numpy as np

__all__ = ["Coalescer"]


class Coalescer:
    """Batches the texts of concurrent ``encode`` calls on one event loop into passes of
    ``encode_batch`` (blocking; run in a thread)."""

    def __init__(self, encode_batch: Callable[[Sequence[str]], np.ndarray], max_texts: int) -> None:
        self._encode_batch = encode_batch
        self._max_texts = max(max_texts, 1)
        self._waiting: list[tuple[list[str], asyncio.Future[np.ndarray]]] = []
        self._drainer: asyncio.Future[None] | None = None

    async def encode(self, texts: Sequence[str]) -> np.ndarray:
        future: asyncio.Future[np.ndarray] = asyncio.get_running_loop().create_future()
        self._waiting.append((list(texts), future))
        if self._drainer is None:
            self._drainer = asyncio.ensure_future(self._drain())
        return await future

    def _next_batch(self) -> list[tuple[list[str], asyncio.Future[np.ndarray]]]:
        batch: list[tuple[list[str], asyncio.Future[np.ndarray]]] = []
        count = 0
        while self._waiting and (not batch or count + len(self._waiting[0][0]) <= self._max_texts):
            item = self._waiting.pop(0)
            if not item[1].done():  # a cancelled caller's texts are skipped
                batch.append(item)
                count += len(item[0])
        return batch

    async def _drain(self) -> None:
        try:
            while self._waiting:
                batch = self._next_batch()
                if not batch:
                    continue
                try:
                    vectors = await asyncio.to_thread(self._encode_batch, [t for ts, _ in batch for t in ts])
                except Exception as exc:  # every caller of the pass sees the failure
                    for _, future in batch:
                        if not future.done():
                            future.set_exception(exc)
                    continue
                start = 0
                for texts, future in batch:
                    if not future.done():
                        future.set_result(vectors[start : start + len(texts)])
                    start += len(texts)
        finally:
            self._drainer = None
