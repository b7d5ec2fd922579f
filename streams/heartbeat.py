"""Stage heartbeats: each stage's liveness, written to Postgres every few seconds.

The beat is written by a timer on the worker's event loop, so a loop frozen by one record
stops every beat, and a stage busy on one batch shows how long since it started. /health
reads the rows (`store/heartbeats.py`).
"""

from __future__ import annotations

import logging
import os
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from tempr.store import heartbeats

__all__ = ["StageBeat", "StageBeats", "register"]

log = logging.getLogger(__name__)


@dataclass
class StageBeat:
    processed: int = 0
    failed: int = 0
    busy_since: float | None = None  # wall clock (time.time) of the batch in hand

    @contextmanager
    def busy(self) -> Iterator[None]:
        self.busy_since = time.time()
        try:
            yield
        finally:
            self.busy_since = None


@dataclass
class StageBeats:
    worker: str = field(default_factory=lambda: f"{socket.gethostname()}:{os.getpid()}")
    stages: dict[str, StageBeat] = field(default_factory=dict)

    def stage(self, name: str) -> StageBeat:
        return self.stages.setdefault(name, StageBeat())

    def rows(self) -> list[heartbeats.Beat]:
        return [
            heartbeats.Beat(
                stage=name,
                worker=self.worker,
                busy_since=beat.busy_since,
                processed=beat.processed,
                failed=beat.failed,
            )
            for name, beat in self.stages.items()
        ]


def register(app: Any, ctx: Any) -> None:
    @app.timer(interval=ctx.settings.heartbeat_interval_s)
    async def beat_stages() -> None:
        if not ctx.ready.is_set() or not ctx.beats.stages:
            return
        try:
            await heartbeats.beat(ctx.db, ctx.beats.rows())
        except Exception as exc:  # the database is down: /health says so on its own
            log.warning("could not write stage heartbeats: %r", exc)
