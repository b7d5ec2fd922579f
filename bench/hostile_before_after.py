"""Issue 15's reproductions, black box, on the code before the issue and on this checkout.

    python -m bench.hostile_before_after --old /work/wt-old15 [--new .] [--json PATH]
        [--cases r1,r2,...] [--perf-rounds 2] [--no-perf]

Each checkout (a git worktree with its own `.venv`) runs as a user runs it: `tempr up` in a
subprocess on a fresh data directory and free ports, fed over HTTP (and straight to the broker
with aiokafka for R2 and the unsigned control event). Cases that can break the runtime each get
a fresh `tempr up`; the others share one. Per case:

- the HTTP status of the hostile request(s) (a 5xx count for R5's list);
- whether /health is ok afterwards, and whether a good message still becomes a fact within
  `--good-within` seconds;
- whether a restart of `tempr up` on that data directory comes back (within `--start-within`);
- the fact count for the merge cases.

Everything is bounded by timeouts: the old code freezes or crash-loops (R4's wall is 30k emoji,
not 200k, so its freeze shows in seconds). Every process a runtime starts is recorded while it
runs and killed by pid at the end if it outlived the stop.

Then, unless `--no-perf`, the checks' end-to-end cost: alternating rounds (old, new, old, new)
of a fresh `tempr up` each, ingest rate (the first `--turns` turns of a LoCoMo conversation,
retained in batches of 50, timed until nothing is pending: bench/ingest_rate.py's method on
fewer turns) and recall latency (one recall per question for the first 40 questions: p50 and
p95). The machine is shared, so compare the medians' ratio, not the absolute figures.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import signal
import statistics
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import psutil
from aiokafka import AIOKafkaProducer

from bench.common import console, free_port, percentile, print_table, write_json
from bench.locomo_data import DATA_DIR, load_sample
from tempr.conversations import read_conversations
from tempr.streams.topics import MESSAGES, conversation_key

MESSAGES_TOPIC = MESSAGES.name
GOOD = "Nora adopted a grey cat called Pepper last week."
_ENV = {
    "TEMPR_TOPIC_PARTITIONS": "2",
    "TEMPR_CHUNK_IDLE_S": "0.5",
    "TEMPR_SWEEP_INTERVAL_S": "2",
    "TEMPR_REDELIVER_AFTER_S": "15",
}


@dataclass
class Runtime:
    """One `tempr up` of one checkout on one data directory."""

    checkout: Path
    data_dir: Path
    start_within: float
    port: int = field(default_factory=free_port)
    broker_port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None
    seen: dict[int, float] = field(default_factory=dict)  # pid -> create_time
    start_attempts: int = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.broker_port}"

    def start(self, attempts: int = 3) -> bool:
        """True once /health is ok. On a loaded machine `tempr up` may give up waiting for its
        own children (the old one after a fixed 120 s): tried `attempts` times; a data
        directory that cannot start fails every time (and fast)."""
        for attempt in range(attempts):
            if attempt:
                console.print(f"  [yellow]tempr up did not come up; attempt {attempt + 1}[/yellow]")
                self.stop()
            if self._start_once():
                self.start_attempts = attempt + 1
                return True
        return False

    def _start_once(self) -> bool:
        env = {k: v for k, v in os.environ.items() if not k.startswith("TEMPR_")} | _ENV
        python = self.checkout / ".venv" / "bin" / "python"
        argv = [str(python), "-m", "tempr.cli", "up", "--data-dir", str(self.data_dir)]
        argv += ["--port", str(self.port), "--broker-port", str(self.broker_port)]
        log = open(self.data_dir.parent / f"{self.data_dir.name}-up.log", "ab")  # noqa: SIM115
        self.proc = subprocess.Popen(argv, env=env, cwd=self.checkout, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + self.start_within
        while time.monotonic() < deadline:
            self._note_children()
            if self.proc.poll() is not None:
                return False
            if self.health_ok():
                return True
            time.sleep(0.5)
        return False

    def _note_children(self) -> None:
        if self.proc is None:
            return
        with contextlib.suppress(psutil.Error):
            for child in psutil.Process(self.proc.pid).children(recursive=True):
                with contextlib.suppress(psutil.Error):
                    self.seen[child.pid] = child.create_time()

    def stop(self) -> None:
        self._note_children()
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(45)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None
        self._kill_leftovers()

    def _kill_leftovers(self) -> None:
        """Children that outlived the stop (an old worker frozen in a regex, an orphaned
        Postgres): killed by pid, only if still the same process (same start time). The
        embedded Postgres is not a child (pgserver detaches it): its postmaster.pid names it."""
        time.sleep(1)
        pid_file = self.data_dir / "postgres" / "postmaster.pid"
        with contextlib.suppress(OSError, ValueError, IndexError, psutil.Error):
            postmaster = psutil.Process(int(pid_file.read_text().split()[0]))
            if str(self.data_dir) in " ".join(postmaster.cmdline()):
                self.seen[postmaster.pid] = postmaster.create_time()
        for pid, created in list(self.seen.items()):
            with contextlib.suppress(psutil.Error):
                p = psutil.Process(pid)
                if p.create_time() == created:
                    p.kill()
        self.seen.clear()

    def health(self) -> dict[str, Any]:
        try:
            body = httpx.get(f"{self.url}/health", timeout=5).json()
            return body if isinstance(body, dict) else {}
        except (httpx.HTTPError, ValueError):
            return {}

    def health_ok(self) -> bool:
        return self.health().get("status") == "ok"

    def post(self, path: str, body: Any, timeout: float = 30) -> int:
        try:
            return httpx.post(f"{self.url}{path}", json=body, timeout=timeout).status_code
        except httpx.HTTPError as exc:
            console.print(f"[yellow]{path}: {exc!r}[/yellow]")
            return 0  # no answer at all

    def raw(self, method: str, path: str, body: str | None) -> int:
        try:
            return httpx.request(
                method,
                f"{self.url}{path}",
                content=None if body is None else body.encode("utf-8", "surrogatepass"),
                headers={"content-type": "application/json"},
                timeout=30,
            ).status_code
        except httpx.HTTPError:
            return 0

    def facts(self, bank: str) -> list[str]:
        try:
            r = httpx.get(f"{self.url}/v1/banks/{bank}/memories", params={"limit": 1000}, timeout=15)
        except httpx.HTTPError:
            return []
        return [m["text"] for m in r.json().get("items", [])] if r.status_code == 200 else []

    def bank_pending(self, bank: str) -> int | None:
        try:
            r = httpx.get(f"{self.url}/v1/banks/{bank}/stats", timeout=15)
            return r.json().get("pending_events") if r.status_code == 200 else None
        except (httpx.HTTPError, ValueError):
            return None


def _until(predicate: Callable[[], bool], timeout: float, interval: float = 0.5) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(Exception):
            if predicate():
                return True
        time.sleep(interval)
    return False


def _retain(rt: Runtime, bank: str, texts: list[str], **item: Any) -> int:
    items = [{"content": t, "speaker": "Nora", "timestamp": "2024-05-02T10:00:00Z", **item} for t in texts]
    return rt.post(f"/v1/banks/{bank}/memories", {"items": items})


def good_message_fact(rt: Runtime, within: float) -> bool:
    bank = f"good-{uuid.uuid4().hex[:8]}"
    if _retain(rt, bank, [GOOD]) != 202:
        return False
    return _until(lambda: any("Pepper" in t for t in rt.facts(bank)), within)


def _produce(rt: Runtime, values: list[tuple[bytes, bytes]]) -> str:
    async def send() -> None:
        producer = AIOKafkaProducer(
            bootstrap_servers=rt.bootstrap, enable_idempotence=False, max_request_size=4 * 1024 * 1024
        )
        await producer.start()
        try:
            for key, value in values:
                await asyncio.wait_for(producer.send_and_wait(MESSAGES_TOPIC, value, key=key), 30)
        finally:
            await producer.stop()

    try:
        asyncio.run(send())
        return "produced"
    except Exception as exc:
        return f"not produced: {type(exc).__name__}"


def _message_event(bank: str, content: str) -> bytes:
    """A message event as a producer writes it straight to the topic (the wire format is
    the same before and after the issue)."""
    return json.dumps(
        {
            "event_type": "message",
            "schema_version": 1,
            "event_id": str(uuid.uuid4()),
            "bank_id": bank,
            "message_id": f"m-{uuid.uuid4().hex[:8]}",
            "content": content,
            "speaker": "Nora",
            "conversation_id": "c1",
            "received_at": datetime.now(UTC).isoformat(),
        }
    ).encode()


def _key(bank: str, conversation: str | None) -> bytes:
    return conversation_key(bank, conversation)


# ── the cases ────────────────────────────────────────────────────────────────────────────
# Each returns what it observed; the runner adds health, the good message and the restart.


def r1(rt: Runtime) -> dict[str, Any]:
    body = {"items": [{"content": "Hello there.", "metadata": {"blob": "x" * 1_100_000}}]}
    status = rt.post("/v1/banks/bomb1/memories", body)
    time.sleep(20)  # the sweeper's re-publish
    return {"status": status}


def r2(rt: Runtime) -> dict[str, Any]:
    produced = _produce(
        rt, [(_key("huge", "c1"), _message_event("huge", "Nora writes a long letter. " * 44_500))]
    )
    time.sleep(20)
    return {"status": produced}


def r3(rt: Runtime) -> dict[str, Any]:
    five = "Ana fixed the bike. Ana painted the fence. Ana baked bread. Ana read a novel. Ana swam far."
    status = rt.post(
        "/v1/banks/meta3/memories", {"items": [{"content": five, "metadata": {"blob": "x" * 300_000}}]}
    )
    finished = _until(lambda: rt.bank_pending("meta3") == 0, 40) if status == 202 else None
    return {"status": status, "finished": finished}


def r4(rt: Runtime) -> dict[str, Any]:
    status = rt.post("/v1/banks/emoji4/memories", {"items": [{"content": "\U0001f600" * 30_000}]})
    return {"status": status}


R5 = [
    ("POST", "/v1/banks/{b}/recall", '{"query": "x", "max_tokens": NaN}'),
    ("POST", "/v1/banks/{b}/recall", '{"query": "x", "max_tokens": Infinity}'),
    ("PUT", "/v1/banks/{b}", '{"disposition": {"bias_strength": NaN}}'),
    ("PUT", "/v1/banks/{b}", '{"disposition": {"bias_strength": -Infinity}}'),
    ("POST", "/v1/banks/{b}/memories", '{"items": [{"content": "a\\u0000b"}]}'),
    ("POST", "/v1/banks/{b}/memories", '{"items": [{"content": "hi", "speaker": "\\u0000"}]}'),
    ("POST", "/v1/banks/{b}/memories", '{"items": [{"content": "\\ud800"}]}'),
    ("PUT", "/v1/banks/{b}", '{"name": "\\u0000"}'),
    ("POST", "/v1/banks/a%00b/memories", '{"items": [{"content": "hi"}]}'),
    ("GET", "/v1/banks/{b}/memories?offset=100000000000000000000", None),
    ("GET", "/v1/banks?offset=100000000000000000000", None),
    ("DELETE", "/v1/banks/{b}/documents/%00%00", None),
]


def r5(rt: Runtime) -> dict[str, Any]:
    bank = f"r5-{uuid.uuid4().hex[:6]}"
    _retain(rt, bank, ["Nora likes tea."])
    statuses = [rt.raw(m, u.format(b=bank), b) for m, u, b in R5]
    return {
        "status": f"{sum(s >= 500 or s == 0 for s in statuses)}/{len(statuses)} 5xx",
        "statuses": statuses,
    }


def r6(rt: Runtime) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, item in (
        ("year 1", {"content": "Nora was born long ago.", "timestamp": "0001-01-01T00:00:00Z"}),
        ("year 9999", {"content": "Nora will be late.", "timestamp": "9999-12-31T23:59:59Z"}),
        ("depth 200", {"content": "Nora nests.", "metadata": json.loads('{"a":' * 200 + "1" + "}" * 200)}),
    ):
        bank = f"r6-{uuid.uuid4().hex[:6]}"
        status = rt.post(f"/v1/banks/{bank}/memories", {"items": [item]})
        finished = _until(lambda b=bank: rt.bank_pending(b) == 0, 30) if status == 202 else None  # type: ignore[misc]
        out[name] = {"status": status, "finished": finished}
    out["status"] = " ".join(str(v["status"]) for v in out.values())
    out["finished"] = all(v["finished"] is not False for v in out.values() if isinstance(v, dict))
    return out


def r7(rt: Runtime) -> dict[str, Any]:
    bank = f"outage-{uuid.uuid4().hex[:6]}"
    for i in range(10):
        _retain(rt, bank, [f"Nora planted tree number {i} in the orchard."])
    pid = int((rt.data_dir / "postgres" / "postmaster.pid").read_text().split()[0])
    os.kill(pid, signal.SIGKILL)
    time.sleep(2)
    during = _retain(rt, bank, ["Nora planted the last tree."])
    back = _until(rt.health_ok, 120, interval=1)
    return {"status": f"{during} during the outage", "postgres back": back}


def control(rt: Runtime) -> dict[str, Any]:
    bank = f"victim-{uuid.uuid4().hex[:6]}"
    _retain(rt, bank, ["Nora keeps bees in the garden behind her house."])
    _until(lambda: bool(rt.facts(bank)), 60)
    before = len(rt.facts(bank))
    forged = json.dumps(
        {
            "event_type": "bank_deleted",
            "schema_version": 1,
            "bank_id": bank,
            "deleted_at": datetime.now(UTC).isoformat(),
        }
    ).encode()
    produced = _produce(rt, [(_key(bank, None), forged)])
    time.sleep(15)
    return {"status": produced, "facts": f"{before} -> {len(rt.facts(bank))}"}


def merge_tyres(rt: Runtime) -> dict[str, Any]:
    bank = f"tyres-{uuid.uuid4().hex[:6]}"
    _retain(rt, bank, ["Ivo paid 120 euros for the new tyres."], message_id="m1")
    _until(lambda: bool(rt.facts(bank)), 60)
    status = _retain(rt, bank, ["Ivo paid 450 euros for the new tyres."], message_id="m2")
    _until(lambda: rt.bank_pending(bank) == 0, 60)
    time.sleep(2)
    texts = rt.facts(bank)
    return {
        "status": status,
        "facts": f"{len(texts)} (450 kept: {'yes' if any('450' in t for t in texts) else 'no'})",
    }


def merge_apples(rt: Runtime, n: int = 100) -> dict[str, Any]:
    bank = f"apples-{uuid.uuid4().hex[:6]}"
    texts = [f"Alice bought {i} apples at the market on Monday." for i in range(1, n + 1)]
    items = [
        {"content": t, "speaker": "Alice", "timestamp": "2024-05-06T10:00:00Z", "message_id": f"a{i}"}
        for i, t in enumerate(texts)
    ]
    status = rt.post(f"/v1/banks/{bank}/memories", {"items": items})
    _until(lambda: rt.bank_pending(bank) == 0, 180)
    time.sleep(2)
    return {"status": status, "facts": f"{len(rt.facts(bank))} of {n}"}


FRESH: dict[str, Callable[[Runtime], dict[str, Any]]] = {"r1": r1, "r2": r2, "r3": r3, "r4": r4, "r7": r7}
SHARED: dict[str, Callable[[Runtime], dict[str, Any]]] = {
    "r5": r5,
    "r6": r6,
    "control": control,
    "merge_tyres": merge_tyres,
    "merge_apples": merge_apples,
}


@dataclass
class Options:
    good_within: float
    start_within: float
    work: Path


def _after(rt: Runtime, opts: Options, result: dict[str, Any]) -> None:
    result["health ok"] = _until(rt.health_ok, 20)
    result["good fact"] = good_message_fact(rt, opts.good_within)


def _restart(rt: Runtime) -> bool:
    rt.stop()
    return rt.start()


def run_checkout(label: str, checkout: Path, cases: list[str], opts: Options) -> dict[str, dict[str, Any]]:
    results: dict[str, dict[str, Any]] = {}
    for name in [c for c in cases if c in FRESH]:
        rt = Runtime(checkout, opts.work / f"{label}-{name}", opts.start_within)
        rt.data_dir.mkdir(parents=True)
        console.print(f"[bold]{label}[/bold] {name}: fresh tempr up")
        try:
            if not rt.start():
                results[name] = {"status": "tempr up did not start"}
                continue
            result = FRESH[name](rt)
            _after(rt, opts, result)
            result["restart ok"] = _restart(rt)
            result["restart attempts"] = rt.start_attempts if result["restart ok"] else 3
            results[name] = result
        finally:
            rt.stop()
            console.print(f"  {name}: {results.get(name)}")
    shared = [c for c in cases if c in SHARED]
    if shared:
        rt = Runtime(checkout, opts.work / f"{label}-shared", opts.start_within)
        rt.data_dir.mkdir(parents=True)
        console.print(f"[bold]{label}[/bold] {', '.join(shared)}: one tempr up")
        try:
            if not rt.start():
                return results | {name: {"status": "tempr up did not start"} for name in shared}
            for name in shared:
                result = SHARED[name](rt)
                _after(rt, opts, result)
                results[name] = result
                console.print(f"  {name}: {result}")
            came_back = _restart(rt)
            for name in shared:
                results[name]["restart ok"] = came_back
        finally:
            rt.stop()
    return results


# ── the checks' cost, end to end ─────────────────────────────────────────────────────────


def perf_round(checkout: Path, data_dir: Path, turns: int, opts: Options) -> dict[str, float]:
    sample = load_sample(DATA_DIR / "conv-26.json")
    items = [
        item.model_dump(mode="json", exclude_none=True)
        for conversation in read_conversations(DATA_DIR / "conv-26.json")
        for item in conversation.items
    ][:turns]
    rt = Runtime(checkout, data_dir, opts.start_within)
    data_dir.mkdir(parents=True)
    try:
        if not rt.start():
            raise RuntimeError(f"tempr up of {checkout} did not start")
        _retain(rt, "warmup", ["Nora likes tea.", "Nora lives in Oslo."])
        _until(lambda: rt.bank_pending("warmup") == 0, 300)
        started = time.monotonic()
        for i in range(0, len(items), 50):
            assert rt.post("/v1/banks/perf/memories", {"items": items[i : i + 50]}, timeout=120) == 202
        if not _until(lambda: rt.bank_pending("perf") == 0, 1200, interval=0.3):
            raise RuntimeError("ingest did not finish in 20 min")
        ingest_s = time.monotonic() - started
        latencies = []
        with httpx.Client(base_url=rt.url, timeout=60) as client:
            for q in sample.questions[:40]:
                t0 = time.perf_counter()
                r = client.post("/v1/banks/perf/recall", json={"query": q.question})
                latencies.append((time.perf_counter() - t0) * 1000)
                assert r.status_code == 200, r.text
        return {
            "turns_per_s": len(items) / ingest_s,
            "recall_p50_ms": percentile(latencies, 50),
            "recall_p95_ms": percentile(latencies, 95),
            "facts": float(len(rt.facts("perf"))),
        }
    finally:
        rt.stop()


# ── main ─────────────────────────────────────────────────────────────────────────────────


def _cell(result: dict[str, Any] | None) -> str:
    if result is None:
        return "–"
    parts = [str(result.get("status", ""))]
    for key in ("finished", "postgres back", "facts"):
        if key in result and result[key] is not None:
            parts.append(f"{key}: {result[key]}")
    flags = [("health", "health ok"), ("good fact", "good fact"), ("restart", "restart ok")]
    parts.append(" ".join(f"{short} {'✓' if result.get(k) else '✗'}" for short, k in flags if k in result))
    return "; ".join(p for p in parts if p)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--old", type=Path, default=Path("../wt-old15"), help="checkout before issue 15 (with .venv)"
    )
    parser.add_argument("--new", type=Path, default=Path(__file__).resolve().parents[1])
    parser.add_argument("--cases", default=",".join([*FRESH, *SHARED]))
    parser.add_argument("--good-within", type=float, default=60.0)
    parser.add_argument("--start-within", type=float, default=180.0)
    parser.add_argument("--perf-rounds", type=int, default=2)
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--no-perf", action="store_true")
    parser.add_argument("--no-hostile", action="store_true")
    parser.add_argument("--json", type=Path, default=Path("bench/results/hostile_before_after.json"))
    parser.add_argument("--keep", action="store_true", help="keep the data directories")
    parser.add_argument("--only", choices=("old", "new"), help="run one checkout (combine later)")
    parser.add_argument("--combine", type=Path, nargs="+", help="print the tables of earlier --json files")
    args = parser.parse_args()
    cases = [c.strip() for c in args.cases.split(",") if c.strip()]
    if args.combine:
        combined: dict[str, Any] = {"cases": {}, "perf": {}, "commits": {}, "checkouts": {}}
        for path in args.combine:
            part = json.loads(path.read_text())
            for key in ("cases", "commits", "checkouts"):
                combined[key] |= part.get(key, {})
            combined["perf"] = part.get("perf") or combined["perf"]
        write_json(args.json, combined)
        print(markdown(combined, cases))
        return
    opts = Options(args.good_within, args.start_within, Path(tempfile.mkdtemp(prefix="tempr-hostile-")))
    checkouts = {"old": args.old.resolve(), "new": args.new.resolve()}
    if args.only:
        checkouts = {args.only: checkouts[args.only]}
    out: dict[str, Any] = {"checkouts": {k: str(v) for k, v in checkouts.items()}, "cases": {}, "perf": {}}
    for label, path in checkouts.items():
        out["commits"] = out.get("commits", {}) | {
            label: subprocess.run(
                ["git", "-C", str(path), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
            ).stdout.strip()
        }
    if not args.no_hostile:
        for label, path in checkouts.items():
            out["cases"][label] = run_checkout(label, path, cases, opts)
        labels = list(checkouts)
        print_table(
            "Hostile inputs: " + " vs ".join(f"{label} ({out['commits'][label]})" for label in labels),
            ["case", *labels],
            [[c, *(_cell(out["cases"][label].get(c)) for label in labels)] for c in cases],
        )
    if not args.no_perf:
        rounds: dict[str, list[dict[str, float]]] = {"old": [], "new": []}
        for r in range(args.perf_rounds):
            for label, path in checkouts.items():
                console.print(f"[bold]perf[/bold] round {r + 1}: {label}")
                rounds[label].append(perf_round(path, opts.work / f"perf-{label}-{r}", args.turns, opts))
                console.print(f"  {rounds[label][-1]}")
        med = {label: {k: statistics.median(x[k] for x in rs) for k in rs[0]} for label, rs in rounds.items()}
        out["perf"] = {"rounds": rounds, "median": med, "turns": args.turns}
        print_table(
            f"The checks' cost end to end ({args.perf_rounds} alternating rounds each, medians)",
            ["measure", "old", "new", "new / old"],
            [[k, med["old"][k], med["new"][k], med["new"][k] / med["old"][k]] for k in med["old"]],
        )
    write_json(args.json, out)
    print(markdown(out, cases))
    if not args.keep:
        shutil.rmtree(opts.work, ignore_errors=True)


def markdown(out: dict[str, Any], cases: list[str]) -> str:
    """The tables again, for docs/benchmarks.md."""
    lines = []
    if out["cases"]:
        labels = list(out["cases"])
        lines += ["| case | " + " | ".join(f"{label} ({out['commits'][label]})" for label in labels) + " |"]
        lines += ["|---|" + "---|" * len(labels)]
        for c in cases:
            cells = [_cell(out["cases"][label].get(c)).replace("|", "/") for label in labels]
            lines.append(f"| {c} | " + " | ".join(cells) + " |")
    if out["perf"]:
        med = out["perf"]["median"]
        lines += ["", "| measure (median) | old | new | new / old |", "|---|---:|---:|---:|"]
        lines += [
            f"| {k} | {med['old'][k]:.2f} | {med['new'][k]:.2f} | {med['new'][k] / med['old'][k]:.2f} |"
            for k in med["old"]
        ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
