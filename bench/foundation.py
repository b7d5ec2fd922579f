"""Foundation figures of the embedded runtime.

- start-up: from `Supervisor` creation to `GET /health` ok, on a fresh data directory and
  again on the same (reused) directory;
- retain → visible: single retains, each timed from the POST to its fact appearing in
  `GET /v1/banks/{bank}/memories` (polled every 20 ms).

    python -m bench.foundation [--retains 20] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

from bench.common import (
    REPO,
    console,
    embedded_settings,
    print_table,
    start_supervisor,
    summarize,
    write_json,
)

POLL_INTERVAL_S = 0.020
# Distinct people, things and places, so that no two retains become one merged fact.
_PEOPLE = ["Dana", "Priya", "Tomasz", "Keiko", "Oluwaseun", "Marta", "Ravi"]
_THINGS = ["a grey cat", "a red bicycle", "a sourdough starter", "a ukulele", "a telescope"]
_PLACES = ["Lisbon", "Nairobi", "Osaka", "Montreal", "Krakow", "Lima"]


def retain_content(index: int) -> str:
    person = _PEOPLE[index % len(_PEOPLE)]
    thing = _THINGS[index % len(_THINGS)]
    place = _PLACES[index % len(_PLACES)]
    return f"{person} bought {thing} in {place} on day {index} of the trip."


def timed_start(data_dir: Path) -> tuple[Any, float]:
    """Start the runtime on `data_dir`; returns it and the seconds until /health was ok."""
    started = time.perf_counter()
    supervisor = start_supervisor(embedded_settings(data_dir))
    return supervisor, time.perf_counter() - started


def _visible(client: httpx.Client, bank: str, message_id: str) -> bool:
    body = client.get(f"/v1/banks/{bank}/memories", params={"limit": 1000}).json()
    return any(message_id in item.get("source_message_ids", []) for item in body["items"])


def retain_to_visible(client: httpx.Client, bank: str, index: int, *, timeout: float = 60.0) -> float:
    """POST one retain and poll until its fact is listed; seconds from POST to visible."""
    message_id = f"foundation-{index}"
    item = {
        "content": retain_content(index),
        "speaker": "Sam",
        "timestamp": datetime.now(UTC).isoformat(),
        "conversation_id": f"foundation-{index}",
        "message_id": message_id,
    }
    started = time.perf_counter()
    response = client.post(f"/v1/banks/{bank}/memories", json={"items": [item]})
    response.raise_for_status()
    while not _visible(client, bank, message_id):
        if time.perf_counter() - started > timeout:
            dead = client.get("/v1/dead-letters").text[:2000]
            raise TimeoutError(f"{message_id} not visible after {timeout:.0f}s; dead letters: {dead}")
        time.sleep(POLL_INTERVAL_S)
    return time.perf_counter() - started


def measure_retains(base_url: str, count: int) -> tuple[float, list[float]]:
    """One warm-up retain (reported apart), then `count` measured ones, in a fresh bank."""
    bank = f"foundation-{uuid.uuid4().hex[:8]}"
    with httpx.Client(base_url=base_url, timeout=30) as client:
        first = retain_to_visible(client, bank, 0)
        return first, [retain_to_visible(client, bank, i) for i in range(1, count + 1)]


def start_and_measure(data_dir: Path, retains: int) -> dict[str, Any]:
    """In this process: start on `data_dir`, time it, measure `retains` retains, stop."""
    supervisor, startup = timed_start(data_dir)
    result: dict[str, Any] = {"startup_s": startup}
    try:
        if retains:
            s = supervisor.settings
            console.print(f"{retains} single retains → visible")
            first, latencies = measure_retains(f"http://{s.host}:{s.port}", retains)
            result.update(first_s=first, latencies_s=latencies)
    finally:
        supervisor.stop()
    return result


def _in_fresh_process(data_dir: Path, retains: int) -> dict[str, Any]:
    """Each start runs in its own process, as every `tempr up` does (pgserver also caches
    one server per data directory per process, so a second start in-process cannot work)."""
    argv = [sys.executable, "-m", "bench.foundation", "--child", str(data_dir), "--retains", str(retains)]
    done = subprocess.run(argv, cwd=REPO, stdout=subprocess.PIPE, check=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def run(retains: int) -> dict[str, Any]:
    data_dir = Path(tempfile.mkdtemp(prefix="tempr-foundation-")) / "data"
    try:
        console.print("start-up on a fresh data directory")
        fresh = _in_fresh_process(data_dir, 0)
        console.print("start-up on the reused data directory")
        reused = _in_fresh_process(data_dir, retains)
    finally:
        shutil.rmtree(data_dir.parent, ignore_errors=True)
    latencies_ms = [v * 1000 for v in reused["latencies_s"]]
    return {
        "startup_s": {
            "fresh_data_dir": fresh["startup_s"],
            "reused_data_dir": reused["startup_s"],
            # /health is ok before the worker has joined its consumer group: the first retain
            # shows when the pipeline really flows.
            "first_retain_visible_reused": reused["startup_s"] + reused["first_s"],
        },
        "retain_to_visible_ms": {
            **summarize(latencies_ms),
            "first_after_start": reused["first_s"] * 1000,
            "samples": latencies_ms,
        },
        "meta": {
            "date": datetime.now(UTC).isoformat(timespec="seconds"),
            "cpus": os.cpu_count(),
            "poll_interval_ms": POLL_INTERVAL_S * 1000,
            "retains": retains,
            "command": "python -m bench.foundation",
        },
    }


def report(result: dict[str, Any]) -> None:
    start = result["startup_s"]
    print_table(
        "start-up (Supervisor created → /health ok)",
        ["data dir", "seconds"],
        [
            ["fresh", start["fresh_data_dir"]],
            ["reused", start["reused_data_dir"]],
            ["reused, until a first retain is visible", start["first_retain_visible_reused"]],
        ],
        digits=1,
    )
    lat = result["retain_to_visible_ms"]
    print_table(
        f"retain → visible in GET memories, ms (n={lat['n']}; first retain after start: "
        f"{lat['first_after_start']:.0f} ms, not included)",
        ["", "median", "p95", "min", "max"],
        [["retain → visible", lat["median"], lat["p95"], lat["min"], lat["max"]]],
        digits=0,
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--retains", type=int, default=20, help="measured single retains (default 20)")
    parser.add_argument("--json", type=Path, default=None, help="write the figures here")
    parser.add_argument("--child", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child is not None:
        print(json.dumps(start_and_measure(args.child, args.retains)))
        return
    result = run(args.retains)
    report(result)
    write_json(args.json, result)


if __name__ == "__main__":
    main()
