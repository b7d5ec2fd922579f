"""The typed bundle of clients every agent receives, with one owner of its lifecycle."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import asyncpg

from tempr.inference.embeddings import Embedder, embedder_from_settings
from tempr.inference.llm import LLMClient
from tempr.inference.threads import configure_torch_threads
from tempr.settings import Settings
from tempr.store.embedding_column import check_embedding_model
from tempr.store.pool import create_pool
from tempr.streams.heap import freeze_start_up_heap
from tempr.streams.heartbeat import StageBeats
from tempr.streams.inflight import CrashGuard

__all__ = ["WorkerContext"]

log = logging.getLogger(__name__)


@dataclass
class WorkerContext:
    settings: Settings
    pool: asyncpg.Pool | None = None
    embedder: Embedder | None = None
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    beats: StageBeats = field(default_factory=StageBeats)
    _llm: LLMClient | None = None
    _stop_callbacks: list[Callable[[], Awaitable[Any]]] = field(default_factory=list)
    guard: CrashGuard = field(init=False)

    def __post_init__(self) -> None:
        self.guard = CrashGuard(self.settings.max_attempts)

    def on_stop(self, callback: Callable[[], Awaitable[Any]]) -> None:
        self._stop_callbacks.append(callback)

    async def start(self) -> None:
        assert self.settings.database_url, "the worker needs TEMPR_DATABASE_URL"
        # Every stage's session state is transaction-local (store/pool.py): no reset round trip
        # on each release (3.6 % of the worker's samples in a live stream).
        self.pool = await create_pool(self.settings.database_url, max_size=5, reset_sessions=False)
        configure_torch_threads(self.settings.torch_threads, self.settings.worker_embedding_threads())
        # The worker stores vectors and never recalls: no int8 query model.
        self.embedder = await asyncio.to_thread(embedder_from_settings, self.settings, queries=False)
        # Vectors that do not fit the column would send every fact to the DLQ: refuse to start.
        await check_embedding_model(self.pool, self.embedder.model_name, self.embedder.dimension)
        # Everything loaded so far lives as long as the worker: out of the collector's full passes.
        frozen = freeze_start_up_heap()
        log.info(
            "worker context ready (embedding model %s; %d start-up objects frozen)",
            self.settings.embedding_model,
            frozen,
        )
        self.ready.set()

    async def stop(self) -> None:
        if self.pool is not None:
            await self.guard.close(self.pool)
        for callback in reversed(self._stop_callbacks):
            await callback()
        self._stop_callbacks.clear()
        if self._llm is not None:
            await self._llm.aclose()
            self._llm = None
        if self.pool is not None:
            await self.pool.close()
            self.pool = None

    async def wait_ready(self) -> None:
        await self.ready.wait()

    @property
    def db(self) -> asyncpg.Pool:
        assert self.pool is not None, "worker context not started"
        return self.pool

    @property
    def llm(self) -> LLMClient | None:
        """One client for every agent (one connection pool, one record of what the endpoint
        supports); None when no LLM is configured."""
        if self._llm is None and self.settings.llm_configured:
            self._llm = LLMClient(self.settings)
        return self._llm

    def require_llm(self) -> LLMClient:
        """The LLM client, for a stage whose spec says `needs_llm` (so one is configured)."""
        llm = self.llm
        if llm is None:
            raise RuntimeError("this stage needs an LLM and none is configured")
        return llm

    @property
    def embeddings(self) -> Embedder:
        assert self.embedder is not None, "worker context not started"
        return self.embedder
