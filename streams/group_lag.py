"""The workers' consumer-group lag, per topic: records in the log not yet committed by the group.

Read from the broker (the group's committed offsets against each partition's end offset), so
it is only as true as the broker's end offsets: right on Apache Kafka, not on Tansu, which
misreports them. The API reports it beside the journal's count of accepted messages not yet
materialized, which is right on every broker.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient

__all__ = ["GroupLag"]


class GroupLag:
    def __init__(self, bootstrap: str, group_id: str, topics: Sequence[str], **client_options: Any) -> None:
        self.group_id = group_id
        self.topics = tuple(topics)
        self._admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, **client_options)
        # No group: only asks for offsets, never joins or commits.
        self._offsets = AIOKafkaConsumer(
            bootstrap_servers=bootstrap, enable_auto_commit=False, **client_options
        )

    async def start(self) -> None:
        await self._admin.start()
        await self._offsets.start()

    async def stop(self) -> None:
        await self._offsets.stop()
        await self._admin.close()

    async def read(self) -> dict[str, int]:
        """Lag by topic. A partition the group never committed counts from the log's start."""
        partitions = [
            TopicPartition(topic, p) for topic in self.topics for p in sorted(await self._partitions(topic))
        ]
        committed = await self._admin.list_consumer_group_offsets(self.group_id, partitions=partitions)
        ends = await self._offsets.end_offsets(partitions)
        starts = await self._offsets.beginning_offsets(partitions)
        lag = dict.fromkeys(self.topics, 0)
        for tp in partitions:
            meta = committed.get(tp)
            position = meta.offset if meta is not None and meta.offset >= 0 else starts[tp]
            lag[tp.topic] += max(0, ends[tp] - position)
        return lag

    async def _partitions(self, topic: str) -> set[int]:
        partitions = self._offsets.partitions_for_topic(topic)
        if partitions is None:  # not in the cached metadata yet
            await self._offsets._client.force_metadata_update()
            partitions = self._offsets.partitions_for_topic(topic)
        return set(partitions or ())
