"""`tempr up` on Tansu and on Apache Kafka, side by side, in the same run.

    python -m bench.brokers [--messages 600] [--retains 10] [--json brokers.json]

For each broker, `tempr up --broker B` runs as its own process in a fresh data directory
(free ports; the Kafka archive comes from the shared cache, `$TEMPR_KAFKA_CACHE`, so the
one-time 57 MB fetch is not timed) and is measured for:

- start-up: process start → `GET /health` ok, fresh and again on the same data directory;
- memory: resident set of every process of the runtime (tempr up, worker, API, broker JVMs
  or Tansu, Postgres), idle after start and after the ingest;
- ingest: `--messages` turns in 16 conversations, POSTed in batches of 100, until nothing
  is pending; messages/s and facts/s;
- retain → visible: single retains, each timed from the POST to recall answering with
  `after` = its token;
- kill -9 of everything: mid-ingest, SIGKILL to `tempr up`, its children and Postgres at
  once; then `tempr up` again on the same directory: messages lost, stored twice, re-published
  from the journal, and whether the broker's log survived (its end offsets).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import psutil

from bench.common import console, free_port, print_table, retain_items, summarize, wait_until, write_json
from tempr.streams.apache_kafka import cache_dir

BROKERS = ("tansu", "kafka")
_KILL9_KEYS = (
    "accepted",
    "materialized_before_kill",
    "lost",
    "doubled_messages",
    "doubled_facts",
    "republished_from_journal",
    "broker_log_records_after_restart",
)


class Up:
    """One `tempr up` process on a data directory."""

    def __init__(self, broker: str, data_dir: Path) -> None:
        self.broker, self.data_dir = broker, data_dir
        self.port, self.broker_port = free_port(), free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        self.attempts = 0  # starts that gave up and were tried again

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def dsn(self) -> str:
        return f"postgresql://postgres:@/postgres?host={self.data_dir / 'postgres'}"

    def start(self, timeout: float = 300.0) -> float:
        env = {k: v for k, v in os.environ.items() if not k.startswith("TEMPR_")}
        env.update(TEMPR_KAFKA_CACHE=str(cache_dir()), TEMPR_REDELIVER_AFTER_S="3600")
        argv = [sys.executable, "-m", "tempr.cli", "up", "--broker", self.broker, "--data-dir"]
        argv += [str(self.data_dir), "--port", str(self.port), "--broker-port", str(self.broker_port)]
        started = time.monotonic()
        for attempt in (1, 2):  # tempr up gives up after 120 s; a loaded machine may need longer
            with open(self.data_dir.parent / f"{self.data_dir.name}-up.log", "ab") as log:
                self.proc = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT)
            try:
                wait_until(
                    self.healthy, timeout=timeout, interval=0.2, what=f"tempr up --broker {self.broker}"
                )
                break
            except RuntimeError:
                if attempt == 2:
                    raise
                self.attempts += 1
        return time.monotonic() - started

    def healthy(self) -> bool:
        if self.proc is not None and self.proc.poll() is not None:
            raise RuntimeError(f"tempr up exited with {self.proc.returncode}; see {self.data_dir}-up.log")
        try:
            return httpx.get(f"{self.url}/health", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    def processes(self) -> list[psutil.Process]:
        """tempr up and its descendants, and Postgres (pg_ctl daemonizes it away from us)."""
        assert self.proc is not None
        found = {}
        with_root = psutil.Process(self.proc.pid)
        for p in [with_root, *with_root.children(recursive=True)]:
            found[p.pid] = p
        for p in psutil.process_iter(["cmdline"]):
            if str(self.data_dir / "postgres") in " ".join(p.info["cmdline"] or ()):
                found[p.pid] = p
        return list(found.values())

    def rss_mb(self) -> float:
        total = 0
        for p in self.processes():
            with contextlib.suppress(psutil.Error):
                total += p.memory_info().rss
        return total / 2**20

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(90)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def kill_everything(self) -> None:
        """SIGKILL to every process of the runtime at once, Postgres included."""
        victims = self.processes()
        for p in victims:
            with contextlib.suppress(psutil.Error):
                p.send_signal(signal.SIGKILL)
        psutil.wait_procs(victims, timeout=30)


def _turns(bank: str, n: int, offset: int = 0) -> list[dict[str, Any]]:
    return [
        {
            "content": f"On trip {i} {['Maya', 'Tom', 'Ana', 'Raj'][i % 4]} visited "
            f"{['Lisbon', 'Porto', 'Osaka', 'Lima'][i % 4]} and bought {i % 9 + 2} postcards ({bank}).",
            "speaker": ["Maya", "Tom", "Ana", "Raj"][i % 4],
            "conversation_id": f"c{i % 16}",
            "message_id": f"m{i}",
            "timestamp": "2024-03-01T10:00:00Z",
        }
        for i in range(offset, offset + n)
    ]


def _retain(url: str, bank: str, items: list[dict[str, Any]]) -> None:
    with httpx.Client(base_url=url, timeout=60) as client:
        retain_items(client, bank, items, batch=100)


def _pending(url: str) -> int:
    return int(httpx.get(f"{url}/health", timeout=10).json()["pending_events"])


async def _counts(dsn: str, bank: str) -> tuple[int, Counter[str], int]:
    conn = await asyncpg.connect(dsn)
    try:
        accepted = await conn.fetchval("SELECT count(*) FROM messages WHERE bank_id = $1", bank)
        rows = await conn.fetch("SELECT source_message_ids, text FROM memory_units WHERE bank_id = $1", bank)
        republished = await conn.fetchval(
            "SELECT count(*) FROM messages WHERE bank_id = $1 AND publish_count > 1", bank
        )
    finally:
        await conn.close()
    by_message: Counter[str] = Counter(m for r in rows for m in r["source_message_ids"])
    return int(accepted), by_message, int(republished)


def _facts(dsn: str, bank: str) -> Counter[str]:
    async def read() -> Counter[str]:
        conn = await asyncpg.connect(dsn)
        try:
            rows = await conn.fetch("SELECT text FROM memory_units WHERE bank_id = $1", bank)
        finally:
            await conn.close()
        return Counter(r["text"] for r in rows)

    return asyncio.run(read())


async def _log_end(bootstrap: str) -> int:
    from aiokafka import AIOKafkaConsumer, TopicPartition

    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    await consumer.start()
    try:
        partitions = consumer.partitions_for_topic("tempr.messages.v1") or set()
        tps = [TopicPartition("tempr.messages.v1", p) for p in partitions]
        return sum((await consumer.end_offsets(tps)).values()) if tps else 0
    finally:
        await consumer.stop()


def measure(broker: str, root: Path, messages: int, retains: int) -> dict[str, Any]:
    console.print(f"[bold]{broker}[/bold]")
    out: dict[str, Any] = {"broker": broker}
    up = Up(broker, root / broker)
    try:
        out["startup_fresh_s"] = up.start()
        time.sleep(3)
        out["rss_idle_mb"] = up.rss_mb()
        out["processes"] = len(up.processes())

        started = time.monotonic()
        _retain(up.url, "ingest", _turns("ingest", messages))
        wait_until(lambda: _pending(up.url) == 0, timeout=1800, interval=0.5, what="ingest drained")
        elapsed = time.monotonic() - started
        facts = sum(_facts(up.dsn, "ingest").values())
        out.update(
            ingest_s=elapsed, messages_per_s=messages / elapsed, facts=facts, facts_per_s=facts / elapsed
        )
        out["rss_after_ingest_mb"] = up.rss_mb()

        latencies = []
        with httpx.Client(base_url=up.url, timeout=60) as client:
            for i in range(retains + 1):
                item = {"content": f"Probe {i}: Zelda keeps {i + 3} ferrets in Graz.", "message_id": f"v{i}"}
                t0 = time.monotonic()
                token = client.post("/v1/banks/visible/memories", json={"items": [item]}).json()
                q = {"query": f"Probe {i} ferrets", "after": token["consistency"]["token"], "budget": "low"}
                assert client.post("/v1/banks/visible/recall", json=q).status_code == 200
                if i:  # the first one warms up
                    latencies.append((time.monotonic() - t0) * 1000)
        out["retain_visible_ms"] = summarize(latencies)
    finally:
        up.stop()

    out["startup_reused_s"] = up.start()
    out["kill9"] = dict.fromkeys(_KILL9_KEYS, "not measured")
    try:
        # kill -9 of everything, mid-ingest
        _retain(up.url, "killed", _turns("killed", messages))
        wait_until(lambda: len(asyncio.run(_counts(up.dsn, "killed"))[1]) >= messages // 10, timeout=600)
        bootstrap = f"127.0.0.1:{up.broker_port}"
        before = asyncio.run(_counts(up.dsn, "killed"))[1]
        up.kill_everything()
        up.start()
        try:
            log_end: int | str = asyncio.run(asyncio.wait_for(_log_end(bootstrap), timeout=60))
        except (Exception, asyncio.CancelledError) as exc:  # the figure is a bonus; go on
            log_end = f"unread ({type(exc).__name__})"
        wait_until(lambda: _pending(up.url) == 0, timeout=1800, interval=0.5, what="recovered")
        accepted, by_message, republished = asyncio.run(_counts(up.dsn, "killed"))
        facts = _facts(up.dsn, "killed")
        out["kill9"] = {
            "accepted": accepted,
            "materialized_before_kill": len(before),
            "lost": sum(1 for i in range(messages) if by_message[f"m{i}"] == 0),
            "doubled_messages": sum(1 for c in by_message.values() if c > 1),
            "doubled_facts": sum(1 for c in facts.values() if c > 1),
            "republished_from_journal": republished,
            "broker_log_records_after_restart": log_end,
        }
    except (RuntimeError, TimeoutError) as exc:  # reported, and the other broker still measured
        console.print(f"[red]kill -9 phase on {broker} failed: {exc}[/red]")
        out["kill9_error"] = str(exc)
    finally:
        up.stop()
    out["start_retries"] = up.attempts
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--messages", type=int, default=600)
    parser.add_argument("--retains", type=int, default=10)
    parser.add_argument("--brokers", nargs="+", default=list(BROKERS), choices=BROKERS)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="tempr-brokers-"))
    results = []
    for broker in args.brokers:  # written after each broker: a later failure keeps the earlier
        results.append(measure(broker, root, args.messages, args.retains))
        write_json(args.json, {"messages": args.messages, "retains": args.retains, "results": results})
    print_table(
        "tempr up: Tansu vs Apache Kafka",
        ["", *args.brokers],
        [
            ["start-up, fresh (s)", *(r["startup_fresh_s"] for r in results)],
            ["start-up, reused (s)", *(r["startup_reused_s"] for r in results)],
            ["processes", *(r["processes"] for r in results)],
            ["RSS idle (MB)", *(r["rss_idle_mb"] for r in results)],
            ["RSS after ingest (MB)", *(r["rss_after_ingest_mb"] for r in results)],
            ["ingest (messages/s)", *(r["messages_per_s"] for r in results)],
            ["ingest (facts/s)", *(r["facts_per_s"] for r in results)],
            ["retain → recall with after, median (ms)", *(r["retain_visible_ms"]["median"] for r in results)],
            ["retain → recall with after, p95 (ms)", *(r["retain_visible_ms"]["p95"] for r in results)],
            *[
                [f"kill -9 all: {k.replace('_', ' ')}", *(r["kill9"][k] for r in results)]
                for k in _KILL9_KEYS
            ],
        ],
        digits=1,
    )
    write_json(args.json, {"messages": args.messages, "retains": args.retains, "results": results})


if __name__ == "__main__":
    main()
