"""The sweeper: re-publish journal entries (and fact corrections) that stalled before being
materialized.

End-to-end acknowledgement: whatever any consumer's offsets say, an accepted message is
done only when the materializer has stamped its journal row. What cannot be re-published
(too large, no longer valid, published too often) is parked in the dead letters instead.
"""

from __future__ import annotations

import logging

import faust

from tempr.store import corrections
from tempr.streams.context import WorkerContext
from tempr.streams.kafka_security import kafka_client_options
from tempr.streams.publisher import Publisher, start_producer
from tempr.streams.stage import Topics

__all__ = ["register"]

log = logging.getLogger(__name__)


def register(app: faust.App, topics: Topics, ctx: WorkerContext) -> None:
    state: dict[str, Publisher] = {}

    @app.timer(interval=ctx.settings.sweep_interval_s, on_leader=True)
    async def redeliver_stale_messages() -> None:
        if not ctx.ready.is_set():
            return
        publisher = state.get("publisher")
        if publisher is None:
            producer = await start_producer(ctx.settings.bootstrap, **kafka_client_options(ctx.settings))
            publisher = state["publisher"] = Publisher(ctx.db, producer)
            ctx.on_stop(producer.stop)
        try:
            count = await publisher.redeliver(
                older_than_s=ctx.settings.redeliver_after_s, max_publishes=ctx.settings.max_attempts
            )
        except Exception as exc:  # the database or the broker is down: the next sweep retries
            log.warning("the sweep failed: %r", exc)
            return
        if count:
            log.warning("re-published %d journal entries that were not materialized in time", count)
        try:
            due = await corrections.due_corrections(ctx.db, older_than_s=ctx.settings.redeliver_after_s)
            if due:
                await publisher.publish_corrections(due)
                log.warning("re-published %d corrections not applied in time", len(due))
        except Exception as exc:
            log.warning("re-publishing corrections failed: %r", exc)
