"""The sweeper: re-publish journal entries that stayed unprocessed past a timeout.

End-to-end acknowledgement: whatever any consumer's offsets say, an accepted message is
done only when the materializer has stamped its journal row.
"""

from __future__ import annotations

import logging
from typing import Any

from tempr.streams.publisher import Publisher, start_producer

__all__ = ["register"]

log = logging.getLogger(__name__)


def register(app: Any, ctx: Any) -> None:
    state: dict[str, Publisher] = {}

    @app.timer(interval=ctx.settings.sweep_interval_s, on_leader=True)
    async def redeliver_stale_messages() -> None:
        if not ctx.ready.is_set():
            return
        publisher = state.get("publisher")
        if publisher is None:
            producer = await start_producer(ctx.settings.bootstrap)
            publisher = state["publisher"] = Publisher(ctx.db, producer)
            ctx.on_stop(producer.stop)
        count = await publisher.redeliver(older_than_s=ctx.settings.redeliver_after_s)
        if count:
            log.warning("re-published %d journal entries that were not materialized in time", count)
