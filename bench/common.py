"""Shared helpers of the benchmarks: the runtime under test, waiting, statistics, output.

A benchmark either talks to a running server (`--url`) or starts the embedded runtime
itself, with the same `Supervisor` that `tempr up` uses, in a temporary data directory on
free ports, and stops it at the end.
"""

from __future__ import annotations

import json
import math
import shutil
import socket
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
from rich.console import Console
from rich.table import Table

from tempr.settings import Settings

__all__ = [
    "REPO",
    "console",
    "embedded_settings",
    "free_port",
    "percentile",
    "print_table",
    "retain_items",
    "running_server",
    "start_supervisor",
    "summarize",
    "wait_for_health",
    "wait_until",
    "wait_until_materialized",
    "write_json",
]

REPO = Path(__file__).resolve().parents[1]
console = Console(stderr=True)


# ── statistics ───────────────────────────────────────────────────────────────────────────


def percentile(values: Sequence[float], p: float) -> float:
    """The p-th percentile (0-100) with linear interpolation between closest ranks
    (numpy's default method). NaN for no values."""
    if not 0 <= p <= 100:
        raise ValueError(f"percentile must be within [0, 100], got {p}")
    if not values:
        return math.nan
    ordered = sorted(values)
    position = (len(ordered) - 1) * p / 100
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def summarize(values: Sequence[float]) -> dict[str, float]:
    """median, p95, min, max (and n) of a sample."""
    return {
        "n": len(values),
        "median": percentile(values, 50),
        "p95": percentile(values, 95),
        "min": min(values) if values else math.nan,
        "max": max(values) if values else math.nan,
    }


# ── output ───────────────────────────────────────────────────────────────────────────────


def _cell(value: object, digits: int) -> str:
    if isinstance(value, float):
        return "–" if math.isnan(value) else f"{value:.{digits}f}"
    return str(value)


def print_table(
    title: str, columns: Sequence[str], rows: Sequence[Sequence[object]], *, digits: int = 2
) -> None:
    table = Table(title=title, title_justify="left")
    for index, column in enumerate(columns):
        table.add_column(column, justify="left" if index == 0 else "right")
    for row in rows:
        table.add_row(*(_cell(value, digits) for value in row))
    Console().print(table)


def _json_safe(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, Mapping):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    return value


def write_json(path: Path | None, data: Mapping[str, Any]) -> None:
    """Write `data` (NaN → null) as indented JSON; nothing when no path is given."""
    if path is None:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(_json_safe(data), indent=2, sort_keys=False) + "\n")
    console.print(f"wrote {path}")


# ── waiting ──────────────────────────────────────────────────────────────────────────────


def wait_until(
    predicate: Callable[[], bool], *, timeout: float, interval: float = 0.2, what: str = "condition"
) -> float:
    """Poll until `predicate()` is true; returns the seconds waited."""
    started = time.monotonic()
    while not predicate():
        if time.monotonic() - started > timeout:
            raise TimeoutError(f"{what} not met within {timeout:.0f}s")
        time.sleep(interval)
    return time.monotonic() - started


def wait_for_health(client: httpx.Client, *, timeout: float = 180.0) -> dict[str, Any]:
    body: dict[str, Any] = {}

    def healthy() -> bool:
        nonlocal body
        try:
            response = client.get("/health", timeout=10)
        except httpx.HTTPError:
            return False
        body = response.json() if response.status_code == 200 else {}
        return response.status_code == 200

    wait_until(healthy, timeout=timeout, interval=0.3, what="GET /health ok")
    return body


def retain_items(
    client: httpx.Client, bank: str, items: Sequence[Mapping[str, Any]], *, batch: int = 200
) -> None:
    """POST the items to the bank's memories in batches; any answer but 202 Accepted raises."""
    for start in range(0, len(items), batch):
        response = client.post(
            f"/v1/banks/{bank}/memories", json={"items": list(items[start : start + batch])}
        )
        if response.status_code != 202:
            raise RuntimeError(f"retain into {bank} failed: {response.status_code} {response.text}")


def wait_until_materialized(client: httpx.Client, *, timeout: float = 1800.0) -> float:
    """Poll /health until no accepted message is waiting to be materialized."""

    def drained() -> bool:
        try:
            response = client.get("/health", timeout=10)
        except httpx.HTTPError:
            return False
        return response.status_code == 200 and response.json().get("pending_events") == 0

    return wait_until(drained, timeout=timeout, interval=0.5, what="pending_events == 0")


# ── the runtime under test ───────────────────────────────────────────────────────────────


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def embedded_settings(data_dir: Path, **overrides: Any) -> Settings:
    """Defaults (and TEMPR_* from the environment), with free ports and the given data dir."""
    values: dict[str, Any] = {"data_dir": data_dir, "port": free_port(), "broker_port": free_port()}
    values.update(overrides)
    return Settings(**values)


def start_supervisor(settings: Settings, *, timeout: float = 300.0) -> Any:
    """Start everything like `tempr up` does; returns the running Supervisor."""
    from tempr.streams.runtime import Supervisor

    supervisor = Supervisor(settings, say=lambda msg: console.print(f"[dim]· {msg}[/dim]"))
    try:
        supervisor.start_services()
        supervisor.start_children()
        supervisor.wait_until_healthy(timeout=timeout)
    except BaseException:
        supervisor.stop()
        raise
    return supervisor


@contextmanager
def running_server(url: str | None, *, keep: bool = False) -> Iterator[str]:
    """Yield the base URL of a server: `url` as given, or an embedded runtime in a
    temporary data directory that is stopped (and removed unless `keep`) afterwards."""
    if url:
        yield url.rstrip("/")
        return
    data_dir = Path(tempfile.mkdtemp(prefix="tempr-bench-"))
    console.print(f"starting the embedded runtime in {data_dir}")
    supervisor = start_supervisor(embedded_settings(data_dir))
    try:
        s = supervisor.settings
        yield f"http://{s.host}:{s.port}"
    finally:
        console.print("stopping the embedded runtime")
        supervisor.stop()
        if keep:
            console.print(f"kept {data_dir}")
        else:
            shutil.rmtree(data_dir, ignore_errors=True)
