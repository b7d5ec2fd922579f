"""The Faust app: topics from the catalog, agents from `agents/`, one worker context.

State lives in Postgres, never in Faust tables: the embedded broker misreports partition
end offsets, which breaks table recovery.
"""

from __future__ import annotations

import logging
from typing import Any

import faust
import mode

from tempr.settings import Settings
from tempr.streams.context import WorkerContext
from tempr.streams.faust_transport import TemprFaustApp
from tempr.streams.stage import Topics
from tempr.streams.topics import CHUNKS, DLQ, FACTS, GRAPH, MESSAGES, TopicSpec

__all__ = ["APP_ID", "create_app"]

log = logging.getLogger(__name__)

APP_ID = "tempr"


def _topic(app: faust.App, spec: TopicSpec, settings: Settings) -> Any:
    return app.topic(
        spec.name,
        key_type=bytes,
        value_type=bytes,
        key_serializer="raw",
        value_serializer="raw",
        partitions=spec.partitions or settings.topic_partitions,
    )


def create_app(settings: Settings) -> tuple[faust.App, WorkerContext]:
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

    from tempr.agents import (
        consolidate_observations,
        extract_facts,
        materialize_graph,
        record_dead_letters,
        reinforce_opinions,
        resolve_entities,
        segment_messages,
    )
    from tempr.streams import heartbeat, redelivery

    # The last two subscribe only when an LLM is configured.
    for module in (
        segment_messages,
        extract_facts,
        resolve_entities,
        materialize_graph,
        record_dead_letters,
        reinforce_opinions,
        consolidate_observations,
    ):
        module.register(app, topics, ctx)
    redelivery.register(app, topics, ctx)
    heartbeat.register(app, ctx)
    return app, ctx
