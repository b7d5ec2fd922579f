"""A sustained stream: retains across many banks at a set rate for a set time, through the real
stack, with the backlog over time, retain → recallable latency and a count of what was stored.

    python -m bench.sustained_stream [--banks 1000] [--duration 600] [--rate R | --max-json PATH]
        [--fraction 0.7] [--probe-every 1.0] [--json PATH] [--keep-logs DIR]

Each turn is one retain of one message (as a chat platform forwards turns), sent open-loop on
a fixed schedule to bank ``stream-<n>`` (round robin over ``--banks``), each bank one
conversation with one speaker. Every turn is a distinct statement (its own numbers and names)
of one sentence, so the local extractor makes exactly one fact of it and no two fold together:
facts per bank must equal turns sent, and each message must be cited by exactly one fact.

The rate is ``--rate`` turns/s, or ``--fraction`` of a measured maximum (``--max-json``): the
turns/s an overloaded run of this bench stored while sending (a ``--rate`` above what the
pipeline keeps up with), or the end-to-end facts/s of ``bench.ingest_rate`` (one fact per turn
here).

Reported: pending messages (``/health``) every 2 s, and whether the backlog stayed bounded (the
slope of a line fitted to the second half of the schedule, against the send rate); the turns
sent and stored per second while sending; retain →
recallable for one retain a second (``--probe-every``): the time from sending it until a recall
with ``after`` = its consistency token answers; then, after the backlog drains, per bank the
messages journaled and materialized and the facts stored, against turns sent.

The stack is `tempr up`'s embedded one, configured by the environment like it:
``TEMPR_BROKER=kafka`` streams through Apache Kafka instead of Tansu (``TEMPR_KAFKA_CACHE``
reuses an unpacked broker), ``TEMPR_BATCH_WAIT_S`` sets the ingest stages' batch window.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import numpy as np

from bench.common import (
    console,
    embedded_settings,
    print_table,
    start_supervisor,
    summarize,
    wait_until_materialized,
    write_json,
)

__all__ = ["main", "measured_maximum", "turn_text"]

_NAMES = ("Ada", "Bo", "Cleo", "Dev", "Eli", "Fay", "Gus", "Hana", "Ivo", "Jun", "Kai", "Lea")
_THINGS = ("apples", "books", "candles", "lamps", "maps", "pens", "plates", "shirts", "stamps", "tickets")
_PLACES = ("Lisbon", "Porto", "Braga", "Faro", "Evora", "Coimbra", "Aveiro", "Leiria")


def turn_text(bank: int, seq: int) -> str:
    """One sentence with five or more content words, distinct for every (bank, seq)."""
    thing = _THINGS[(bank + seq) % len(_THINGS)]
    place = _PLACES[(bank * 7 + seq) % len(_PLACES)]
    return f"I bought {seq * 1000 + bank % 1000 + 2} {thing} at the {place} market for order {bank}-{seq}."


def _retrying(send: Callable[[], httpx.Response], attempts: int = 3) -> httpx.Response | None:
    """A request again after a transport error (a kept-alive connection the server closed):
    a retain carries its message id, so a second send is stored once."""
    for _ in range(attempts):
        try:
            return send()
        except httpx.TransportError:
            time.sleep(0.5)
    return None


class Stream:
    def __init__(self, base_url: str, banks: int, rate: float, duration: float, probe_every: float) -> None:
        self.base_url, self.banks, self.rate, self.duration = base_url, banks, rate, duration
        self.probe_every = probe_every
        self.sent: dict[str, int] = {}
        self.failed = 0
        self.latencies: list[float] = []
        self.probe_failures: list[str] = []
        self.backlog: list[tuple[float, int]] = []
        self.lock = threading.Lock()

    def _post(self, client: httpx.Client, bank: int, seq: int) -> tuple[str, str] | None:
        name = f"stream-{bank:04d}"
        item = {
            "content": turn_text(bank, seq),
            "speaker": _NAMES[bank % len(_NAMES)],
            "conversation_id": "chat",
            "message_id": f"m{seq}",
            "timestamp": f"2024-06-{1 + seq % 28:02d}T{seq % 24:02d}:00:00Z",
        }
        response = _retrying(lambda: client.post(f"/v1/banks/{name}/memories", json={"items": [item]}))
        if response is None or response.status_code != 202:
            with self.lock:
                self.failed += 1
            return None
        with self.lock:
            self.sent[name] = self.sent.get(name, 0) + 1
        return name, response.json()["consistency"]["token"]

    def _probe(self, client: httpx.Client, bank: int, seq: int) -> None:
        started = time.perf_counter()
        sent = self._post(client, bank, seq)
        if sent is None:
            return
        name, token = sent
        body = {"query": "What did I buy?", "after": token, "budget": "low", "max_tokens": 256}
        response = _retrying(lambda: client.post(f"/v1/banks/{name}/recall", json=body, timeout=120))
        with self.lock:
            if response is not None and response.status_code == 200:
                self.latencies.append(time.perf_counter() - started)
            else:
                failure = "no answer" if response is None else f"{response.status_code} {response.text[:120]}"
                self.probe_failures.append(failure)

    def _watch(self, client: httpx.Client, stop: threading.Event, t0: float) -> None:
        while not stop.is_set():
            try:
                pending = client.get("/health", timeout=10).json().get("pending_events")
                if isinstance(pending, int):
                    self.backlog.append((time.perf_counter() - t0, pending))
            except httpx.HTTPError:
                pass
            stop.wait(2.0)

    def run(self) -> tuple[float, float]:
        """Send on schedule; returns the seconds the sending took and the drain after it."""
        local = threading.local()

        def client() -> httpx.Client:
            if not hasattr(local, "client"):
                local.client = httpx.Client(base_url=self.base_url, timeout=60)
            return local.client

        total = int(self.rate * self.duration)
        probe_stride = max(1, round(self.rate * self.probe_every))
        stop = threading.Event()
        t0 = time.perf_counter()
        with httpx.Client(base_url=self.base_url) as watcher, ThreadPoolExecutor(max_workers=32) as pool:
            watch = threading.Thread(target=self._watch, args=(watcher, stop, t0), daemon=True)
            watch.start()
            futures = []
            for n in range(total):
                due = t0 + n / self.rate
                delay = due - time.perf_counter()
                if delay > 0:
                    time.sleep(delay)
                bank, seq = n % self.banks, n // self.banks
                if n % probe_stride == 0:
                    futures.append(pool.submit(lambda b=bank, s=seq: self._probe(client(), b, s)))
                else:
                    futures.append(pool.submit(lambda b=bank, s=seq: self._post(client(), b, s)))
            for future in futures:
                future.result()
            sending = time.perf_counter() - t0
            drain = wait_until_materialized(watcher, timeout=3600)
            stop.set()
            watch.join()
        return sending, drain


async def _counts(url: str) -> dict[str, Any]:
    conn = await asyncpg.connect(url)
    try:
        messages = await conn.fetch(
            """SELECT bank_id, count(*) AS n, count(processed_at) AS done FROM messages
               WHERE bank_id LIKE 'stream-%' GROUP BY bank_id"""
        )
        facts = await conn.fetch(
            "SELECT bank_id, count(*) AS n FROM memory_units WHERE bank_id LIKE 'stream-%' GROUP BY bank_id"
        )
        cited = await conn.fetch(
            """SELECT bank_id, m, count(*) AS n FROM memory_units, unnest(source_message_ids) AS m
               WHERE bank_id LIKE 'stream-%' GROUP BY bank_id, m"""
        )
        letters = await conn.fetchval("SELECT count(*) FROM dead_letters")
    finally:
        await conn.close()
    return {
        "messages": {r["bank_id"]: (r["n"], r["done"]) for r in messages},
        "facts": {r["bank_id"]: r["n"] for r in facts},
        "cited": [(r["bank_id"], r["m"], r["n"]) for r in cited],
        "dead_letters": letters,
    }


def _tally(sent: dict[str, int], counts: dict[str, Any]) -> dict[str, int]:
    messages, facts = counts["messages"], counts["facts"]
    cited = counts["cited"]
    return {
        "banks": len(sent),
        "turns_sent": sum(sent.values()),
        "messages_journaled": sum(n for n, _ in messages.values()),
        "messages_materialized": sum(done for _, done in messages.values()),
        "facts_stored": sum(facts.values()),
        "banks_with_facts_lost": sum(1 for b, n in sent.items() if facts.get(b, 0) < n),
        "banks_with_facts_doubled": sum(1 for b, n in sent.items() if facts.get(b, 0) > n),
        "messages_cited_by_no_fact": sum(sent.values()) - len(cited),
        "messages_cited_more_than_once": sum(1 for *_, n in cited if n > 1),
        "dead_letters": counts["dead_letters"],
    }


def _backlog_shape(
    backlog: list[tuple[float, int]], scheduled: float, sending: float, drain: float, rate: float, turns: int
) -> dict[str, Any]:
    """The backlog over the schedule's window (``scheduled`` seconds), and the rates achieved.

    An overloaded run's sender falls behind its schedule and its last retains land after it;
    the backlog drains then, so a window up to the last retain would end on a falling slope
    and call an unbounded backlog bounded. ``processed_per_s`` is what the pipeline stored
    while turns were being sent: in an overloaded run, the pipeline's maximum.
    """
    during = [(t, p) for t, p in backlog if t <= scheduled]
    second_half = [(t, p) for t, p in during if t >= scheduled / 2]
    slope = (
        float(np.polyfit(*zip(*second_half, strict=True), 1)[0]) if len(second_half) >= 3 else float("nan")
    )
    pending = [p for _, p in during]
    at_last_retain = [p for t, p in backlog if t <= sending]
    left = at_last_retain[-1] if at_last_retain else 0
    return {
        "max_pending": max(pending, default=0),
        "median_pending": float(np.median(pending)) if pending else float("nan"),
        "pending_at_end_of_sending": left,
        "second_half_slope_per_s": slope,
        "bounded": bool(slope < 0.02 * rate),
        "drain_s": drain,
        "sent_per_s": turns / sending if sending > 0 else float("nan"),
        "processed_per_s": (turns - left) / sending if sending > 0 else float("nan"),
    }


def measured_maximum(measured: dict[str, Any]) -> float:
    """Turns/s from a maximum's JSON: an overloaded run of this bench (what it stored while
    sending) or ``bench.ingest_rate``'s end-to-end facts/s (one fact per turn here)."""
    if "backlog" in measured:
        return float(measured["backlog"]["processed_per_s"])
    return float(measured["facts_per_s"])


def _rate(args: argparse.Namespace) -> float:
    if args.rate:
        return float(args.rate)
    if args.max_json:
        return args.fraction * measured_maximum(json.loads(Path(args.max_json).read_text()))
    raise SystemExit("give --rate, or --max-json with bench.ingest_rate's JSON")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--banks", type=int, default=1000)
    parser.add_argument("--duration", type=float, default=600.0, help="seconds of sending")
    parser.add_argument("--rate", type=float, help="turns per second")
    parser.add_argument(
        "--max-json",
        type=Path,
        help="an overloaded run's JSON (this bench) or bench.ingest_rate's: the measured maximum",
    )
    parser.add_argument("--fraction", type=float, default=0.7, help="of the measured maximum")
    parser.add_argument("--probe-every", type=float, default=1.0, help="seconds between latency probes")
    parser.add_argument("--json", type=Path)
    parser.add_argument(
        "--keep-logs",
        type=Path,
        help="copy the run's worker, API and broker logs here (the run's directory goes)",
    )
    args = parser.parse_args(argv)
    rate = _rate(args)
    data_dir = Path(tempfile.mkdtemp(prefix="tempr-stream-"))
    supervisor = start_supervisor(embedded_settings(data_dir))
    try:
        s = supervisor.settings
        assert s.database_url
        console.print(f"streaming {rate:.2f} turns/s for {args.duration:.0f}s across {args.banks} banks")
        stream = Stream(f"http://{s.host}:{s.port}", args.banks, rate, args.duration, args.probe_every)
        sending, drain = stream.run()
        counts = asyncio.run(_counts(s.database_url))
    finally:
        supervisor.stop()
        if args.keep_logs is not None:
            args.keep_logs.mkdir(parents=True, exist_ok=True)
            for log in data_dir.glob("*.log"):
                shutil.copy2(log, args.keep_logs / log.name)
        shutil.rmtree(data_dir, ignore_errors=True)
    latency = summarize(stream.latencies)
    result = {
        "rate_turns_per_s": rate,
        "duration_s": args.duration,
        "sending_s": sending,
        "retain_failures": stream.failed,
        "backlog": _backlog_shape(
            stream.backlog, args.duration, sending, drain, rate, sum(stream.sent.values())
        ),
        "backlog_series": stream.backlog,
        "retain_to_recallable_s": latency,
        "probe_failures": stream.probe_failures[:20],
        "counts": _tally(stream.sent, counts),
    }
    b, c = result["backlog"], result["counts"]
    print_table(
        f"Sustained stream: {rate:.2f} turns/s for {args.duration:.0f}s across {args.banks} banks",
        ["what", "value"],
        [
            ["retains refused", stream.failed],
            ["pending messages: median / max", f"{b['median_pending']:.0f} / {b['max_pending']}"],
            [
                "turns sent / stored per second while sending",
                f"{b['sent_per_s']:.1f} / {b['processed_per_s']:.1f}",
            ],
            ["pending at the end of sending", b["pending_at_end_of_sending"]],
            ["backlog slope, second half (messages/s)", b["second_half_slope_per_s"]],
            ["backlog bounded", b["bounded"]],
            ["drain after sending (s)", b["drain_s"]],
            ["retain → recallable p50 (s)", latency["median"]],
            ["retain → recallable p95 (s)", latency["p95"]],
            ["probes / probe failures", f"{latency['n']} / {len(stream.probe_failures)}"],
            *[[k.replace("_", " "), v] for k, v in c.items()],
        ],
    )
    write_json(args.json, result)


if __name__ == "__main__":
    main()
