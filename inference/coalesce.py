"""Concurrent encode calls share forward passes.

A process encodes one batch at a time (LocalEmbedder's lock). Under concurrent recalls each
question's two texts queued behind every other's pass; here the texts that arrive while a
pass runs wait for the next one and go in it together, up to ``max_texts``. A lone call runs
at once, as before. One pass over eight questions costs far less than eight passes, and each
row comes out as it would alone (the attention mask keeps the padding out; tested).

The passes run back to back in one thread while texts wait: handing each batch back through
a busy event loop first would leave the model idle between passes.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future

import numpy as np

__all__ = ["Coalescer"]

_Waiting = tuple[list[str], "Future[np.ndarray]"]


class Coalescer:
    """Batches the texts of concurrent ``encode`` calls (from any event loop) into passes of
    ``encode_batch`` (blocking), run in a worker thread."""

    def __init__(self, encode_batch: Callable[[Sequence[str]], np.ndarray], max_texts: int) -> None:
        self._encode_batch = encode_batch
        self._max_texts = max(max_texts, 1)
        self._lock = threading.Lock()
        self._waiting: list[_Waiting] = []
        self._draining = False

    async def encode(self, texts: Sequence[str]) -> np.ndarray:
        future: Future[np.ndarray] = Future()
        with self._lock:
            self._waiting.append((list(texts), future))
            start, self._draining = not self._draining, True
        if start:
            threading.Thread(target=self._drain, name="tempr-embed", daemon=True).start()
        return await asyncio.wrap_future(future)

    def _next_batch(self) -> list[_Waiting]:
        batch: list[_Waiting] = []
        count = 0
        with self._lock:
            while self._waiting and (not batch or count + len(self._waiting[0][0]) <= self._max_texts):
                texts, future = self._waiting.pop(0)
                if future.set_running_or_notify_cancel():  # a cancelled caller's texts are skipped
                    batch.append((texts, future))
                    count += len(texts)
            if not batch and not self._waiting:
                self._draining = False
        return batch

    def _drain(self) -> None:
        while batch := self._next_batch():
            try:
                vectors = self._encode_batch([t for texts, _ in batch for t in texts])
            except Exception as exc:  # every caller of the pass sees the failure
                for _, future in batch:
                    future.set_exception(exc)
                continue
            start = 0
            for texts, future in batch:
                future.set_result(vectors[start : start + len(texts)])
                start += len(texts)
