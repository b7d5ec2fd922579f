"""What Kafka transactions cost a tempr stage, measured on Apache Kafka 2.3.0 here.

    python -m bench.kafka_transactions [--records 20000] [--batches 10 100 500] [--rounds 3] [--json PATH]

A stage reads a batch, writes one output per input, and commits its input offsets. Three
ways, each over the same records (~600-byte JSON events, 8 partitions) with its own group:

- at-least-once (what the stages do): send the batch, wait for every ack (acks=all), then
  commit the offsets; a crash between the two redelivers the batch, and deterministic ids
  plus upserts absorb it;
- idempotent: the same with the idempotent producer (retries cannot duplicate a batch);
- transactional: one transaction per batch holding the outputs and the input offsets
  (`send_offsets_to_transaction`), so a crash redelivers nothing that was committed.

Printed: the median records/s of `--rounds` runs per mode and batch size, and its ratio to at-least-once in the
same run (the machine is shared, so compare ratios, not absolute figures across runs).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from bench.common import console, print_table, write_json
from tempr.streams.apache_kafka import ApacheKafka

MODES = ("at-least-once", "idempotent", "transactional")
PARTITIONS = 8


async def _topic(bootstrap: str, name: str) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(name, num_partitions=PARTITIONS, replication_factor=1)])
    finally:
        await admin.close()


async def _fill(bootstrap: str, topic: str, records: int) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5)
    await producer.start()
    try:
        for i in range(records):
            value = json.dumps(
                {
                    "event_type": "message",
                    "schema_version": 1,
                    "bank_id": f"b{i % 50}",
                    "n": i,
                    "text": "x" * 500,
                }
            ).encode()
            await producer.send(topic, value=value, key=f"b{i % 50}/c{i % 7}".encode())
        await producer.flush()
    finally:
        await producer.stop()


async def _stage(bootstrap: str, source: str, records: int, batch: int, mode: str) -> float:
    """Runs one stage over every record of `source`; returns records/s."""
    sink = f"bench-out-{uuid.uuid4().hex[:8]}"
    await _topic(bootstrap, sink)
    group = f"bench-{uuid.uuid4().hex[:8]}"
    options: dict[str, Any] = {"acks": "all", "linger_ms": 5}
    if mode == "idempotent":
        options["enable_idempotence"] = True
    if mode == "transactional":
        options["transactional_id"] = group
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, **options)
    consumer = AIOKafkaConsumer(
        source,
        bootstrap_servers=bootstrap,
        group_id=group,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        isolation_level="read_committed",
    )
    await producer.start()
    await consumer.start()
    try:
        done, started = 0, 0.0
        while done < records:
            polled = await consumer.getmany(timeout_ms=1000, max_records=batch)
            if not started:
                started = time.monotonic()  # after the group join, the same for every mode
            offsets = {tp: msgs[-1].offset + 1 for tp, msgs in polled.items() if msgs}
            outputs = [m for msgs in polled.values() for m in msgs]
            if not outputs:
                continue
            if mode == "transactional":
                async with producer.transaction():
                    for m in outputs:
                        await producer.send(sink, value=m.value, key=m.key)
                    await producer.send_offsets_to_transaction(offsets, group)
            else:
                futures = [await producer.send(sink, value=m.value, key=m.key) for m in outputs]
                for f in futures:
                    await f
                await consumer.commit(offsets)
            done += len(outputs)
        return records / (time.monotonic() - started)
    finally:
        await consumer.stop()
        await producer.stop()


async def _run(bootstrap: str, records: int, batches: list[int], rounds: int) -> dict[str, dict[int, float]]:
    """The median of `rounds` runs per mode and batch size; a warm-up run first."""
    source = "bench-in"
    await _topic(bootstrap, source)
    await _fill(bootstrap, source, records)
    await _stage(bootstrap, source, records, batches[-1], MODES[0])  # JIT, page cache, coordinator
    samples: dict[str, dict[int, list[float]]] = {m: {b: [] for b in batches} for m in MODES}
    for _ in range(rounds):
        for batch in batches:
            for mode in MODES:  # interleaved, so load on the machine hits every mode alike
                rate = await _stage(bootstrap, source, records, batch, mode)
                samples[mode][batch].append(rate)
                console.print(f"batch {batch:>4} {mode:>14}: {rate:,.0f} records/s")
    return {m: {b: statistics.median(v) for b, v in by.items()} for m, by in samples.items()}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--records", type=int, default=20000)
    parser.add_argument("--batches", type=int, nargs="+", default=[10, 100, 500])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="tempr-txn-") as tmp, ApacheKafka(Path(tmp)) as bootstrap:
        rates = asyncio.run(_run(bootstrap, args.records, args.batches, args.rounds))
    rows = [
        [f"{mode}, batch {b}", rates[mode][b], rates[mode][b] / rates["at-least-once"][b]]
        for b in args.batches
        for mode in MODES
    ]
    print_table("A stage on Apache Kafka 2.3.0: records/s", ["mode", "records/s", "× at-least-once"], rows)
    write_json(
        args.json,
        {
            "records": args.records,
            "partitions": PARTITIONS,
            "rounds": args.rounds,
            "records_per_s_median": rates,
        },
    )


if __name__ == "__main__":
    main()
