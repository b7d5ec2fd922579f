"""Dead-letter keeper: tempr.dlq.v1 → the dead_letters table (the broker may forget).

A letter is acked only once stored: while Postgres is down the harness waits and retries,
so the letters of an outage are stored when it comes back. Recording a letter parks the
journal rows it covers (`store/dead_letters.py`).
"""

from __future__ import annotations

import logging
from typing import Any

import faust

from tempr.schemas.events import DeadLetter
from tempr.store.dead_letters import record_dead_letter
from tempr.streams.context import WorkerContext
from tempr.streams.stage import Record, StageSpec, Topics, run_stage

__all__ = ["SPEC", "register"]

log = logging.getLogger(__name__)

# Something foreign on the DLQ is itself stored as a letter (directly, never re-sent).
SPEC = StageSpec(name="record_dead_letters", source="dlq", accepts=(DeadLetter,), batch=50)


def register(app: faust.App, topics: Topics, ctx: WorkerContext) -> None:
    async def handle(records: list[Record[DeadLetter]]) -> None:
        async with ctx.db.acquire() as conn, conn.transaction():
            for record in records:
                await record_dead_letter(conn, record.event)

    @app.agent(getattr(topics, SPEC.source), name=SPEC.name)
    async def record_dead_letters(stream: Any) -> None:
        await run_stage(stream, SPEC, ctx, topics, handle)
