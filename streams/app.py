"""The Faust app: topics from the catalog, the stages it is given, one worker context.

State lives in Postgres, never in Faust tables: the embedded broker misreports partition
end offsets, which breaks table recovery.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, Protocol

import faust
import mode

from tempr.settings import Settings
from tempr.streams import heartbeat, redelivery, retention
from tempr.streams.context import WorkerContext
from tempr.streams.faust_transport import TemprFaustApp
from tempr.streams.kafka_security import faust_broker_options
from tempr.streams.stage import StageSpec, Topics
from tempr.streams.topics import CHUNKS, DLQ, FACTS, GRAPH, MESSAGES, TopicSpec

__all__ = ["APP_ID", "Stage", "create_app"]

log = logging.getLogger(__name__)

APP_ID = "tempr"


class Stage(Protocol):
    """A stream stage: subscribes its agent(s) to the app (see `streams/stage.py`)."""

    SPEC: StageSpec

    def register(self, app: faust.App, topics: Topics, ctx: WorkerContext) -> None: ...


def _topic(app: faust.App, spec: TopicSpec, settings: Settings) -> Any:
    return app.topic(
        spec.name,
        key_type=bytes,
        value_type=bytes,
        key_serializer="raw",
        value_serializer="raw",
        partitions=spec.partitions or settings.topic_partitions,
    )


def create_app(settings: Settings, stages: Sequence[Stage] = ()) -> tuple[faust.App, WorkerContext]:
    """The Faust app with ``stages`` subscribed (the worker passes `tempr.agents.worker.STAGES`:
    the stages sit above this layer, so they are handed in rather than imported here)."""
    app = TemprFaustApp(
        APP_ID,
        broker=f"kafka://{settings.bootstrap}",
        store="memory://",
        datadir=str(settings.data_dir / "faust"),
        web_enabled=False,
        topic_partitions=settings.topic_partitions,
        topic_replication_factor=1,
        consumer_auto_offset_reset="earliest",
        broker_commit_every=500,
        # Tansu delays a group join by half the rebalance timeout (Faust's default 60 s made
        # every worker start wait 30 s); 10 s also lets a dead worker's partitions move on
        # sooner. Heartbeats stay well inside the session timeout.
        broker_rebalance_timeout=10.0,
        broker_session_timeout=10.0,
        broker_heartbeat_interval=2.0,
        broker_commit_interval=1.0,
        producer_acks=-1,
        stream_wait_empty=True,
        # Faust's own key/value handling stays raw: events are validated by pydantic.
        key_serializer="raw",
        value_serializer="raw",
        **faust_broker_options(settings),
    )
    ctx = WorkerContext(settings)
    topics = Topics(
        messages=_topic(app, MESSAGES, settings),
        chunks=_topic(app, CHUNKS, settings),
        facts=_topic(app, FACTS, settings),
        graph=_topic(app, GRAPH, settings),
        dlq=_topic(app, DLQ, settings),
    )

    class _Resources(mode.Service):
        async def on_start(self) -> None:
            await ctx.start()

        async def on_stop(self) -> None:
            await ctx.stop()

    app.service(_Resources)

    for stage in stages:
        if stage.SPEC.needs_llm and not settings.llm_configured:
            continue
        stage.register(app, topics, ctx)
    redelivery.register(app, topics, ctx)
    retention.register(app, topics, ctx)
    heartbeat.register(app, ctx)
    return app, ctx
