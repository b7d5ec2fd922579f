"""What Apache Kafka gives that Tansu does not: the idempotent producer, transactions (only
committed records reach read_committed, and the end offsets say so), and consumed offsets
committed inside a transaction."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

pytestmark = pytest.mark.integration


async def new_topic(bootstrap: str, partitions: int = 1) -> str:
    name = f"test-{uuid.uuid4().hex[:12]}"
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(name, num_partitions=partitions, replication_factor=1)])
    finally:
        await admin.close()
    return name


@asynccontextmanager
async def producer(bootstrap: str, **options: object) -> AsyncIterator[AIOKafkaProducer]:
    p = AIOKafkaProducer(bootstrap_servers=bootstrap, **options)
    await p.start()
    try:
        yield p
    finally:
        await p.stop()


@asynccontextmanager
async def consumer(bootstrap: str, *topics: str, **options: object) -> AsyncIterator[AIOKafkaConsumer]:
    c = AIOKafkaConsumer(
        *topics,
        bootstrap_servers=bootstrap,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        **options,
    )
    await c.start()
    try:
        yield c
    finally:
        await c.stop()


async def read_values(bootstrap: str, topic: str, isolation_level: str) -> list[bytes]:
    """Every value of partition 0 up to its end offset, as a consumer of that isolation sees it."""
    tp = TopicPartition(topic, 0)
    async with consumer(bootstrap, isolation_level=isolation_level) as c:
        c.assign([tp])
        await c.seek_to_beginning(tp)
        end = (await c.end_offsets([tp]))[tp]
        values: list[bytes] = []
        while await c.position(tp) < end:
            batch = await c.getmany(tp, timeout_ms=500)
            values += [r.value for r in batch.get(tp, [])]
        return values


async def end_offset(bootstrap: str, topic: str, isolation_level: str) -> int:
    tp = TopicPartition(topic, 0)
    async with consumer(bootstrap, isolation_level=isolation_level) as c:
        return (await c.end_offsets([tp]))[tp]


async def test_idempotent_producer(kafka_bootstrap: str) -> None:
    topic = await new_topic(kafka_bootstrap)
    async with producer(kafka_bootstrap, enable_idempotence=True, acks="all") as p:
        sent = [await p.send_and_wait(topic, f"m{i}".encode(), partition=0) for i in range(20)]
    assert [m.offset for m in sent] == list(range(20))
    assert await end_offset(kafka_bootstrap, topic, "read_uncommitted") == 20
    values = await read_values(kafka_bootstrap, topic, "read_uncommitted")
    assert values == [f"m{i}".encode() for i in range(20)]


async def test_transactions_commit_abort_and_end_offsets(kafka_bootstrap: str) -> None:
    topic = await new_topic(kafka_bootstrap)
    async with producer(kafka_bootstrap, transactional_id=f"tx-{topic}") as p:
        async with p.transaction():
            for v in (b"c1", b"c2", b"c3"):
                await p.send(topic, v, partition=0)
        await p.begin_transaction()
        for v in (b"a1", b"a2"):
            await p.send(topic, v, partition=0)
        await p.abort_transaction()
        async with p.transaction():
            await p.send(topic, b"c4", partition=0)
        # 6 records and 3 commit/abort markers.
        assert await end_offset(kafka_bootstrap, topic, "read_committed") == 9
        assert await end_offset(kafka_bootstrap, topic, "read_uncommitted") == 9

        # While a transaction is open, read_committed ends at the last stable offset.
        await p.begin_transaction()
        await (await p.send(topic, b"open", partition=0))
        assert await end_offset(kafka_bootstrap, topic, "read_committed") == 9
        assert await end_offset(kafka_bootstrap, topic, "read_uncommitted") == 10
        await p.abort_transaction()

    assert await read_values(kafka_bootstrap, topic, "read_committed") == [b"c1", b"c2", b"c3", b"c4"]
    assert await read_values(kafka_bootstrap, topic, "read_uncommitted") == [
        *(b"c1", b"c2", b"c3", b"a1", b"a2", b"c4", b"open")
    ]


async def test_send_offsets_to_transaction(kafka_bootstrap: str) -> None:
    """Consume, produce and commit the consumed offsets atomically; an abort moves nothing."""
    source, sink = await new_topic(kafka_bootstrap), await new_topic(kafka_bootstrap)
    group = f"g-{source}"
    tp = TopicPartition(source, 0)
    async with producer(kafka_bootstrap) as p:
        for i in range(5):
            await p.send_and_wait(source, f"in{i}".encode(), partition=0)

    async with (
        consumer(kafka_bootstrap, group_id=group, isolation_level="read_committed") as c,
        producer(kafka_bootstrap, transactional_id=f"tx-{group}") as p,
    ):
        c.assign([tp])
        records = (await c.getmany(tp, timeout_ms=5000))[tp]
        while len(records) < 5:
            records += (await c.getmany(tp, timeout_ms=5000))[tp]
        async with p.transaction():
            for r in records[:3]:
                await p.send(sink, r.value.upper(), partition=0)
            await p.send_offsets_to_transaction({tp: records[2].offset + 1}, group)
        await p.begin_transaction()
        for r in records[3:]:
            await p.send(sink, r.value.upper(), partition=0)
        await p.send_offsets_to_transaction({tp: records[4].offset + 1}, group)
        await p.abort_transaction()

    admin = AIOKafkaAdminClient(bootstrap_servers=kafka_bootstrap)
    await admin.start()
    try:
        committed = await admin.list_consumer_group_offsets(group)
    finally:
        await admin.close()
    assert committed[tp].offset == 3
    assert await read_values(kafka_bootstrap, sink, "read_committed") == [b"IN0", b"IN1", b"IN2"]
