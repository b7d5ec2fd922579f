"""CPU seconds of the embedded runtime's processes between two snapshots: the worker, the API
(its uvicorn worker processes included), the embedded broker, Postgres (the postmaster and
every backend) and, if asked, the bench process itself (the load it generates costs the same
cores)."""

from __future__ import annotations

import contextlib
import os
from typing import Any

import psutil

from tempr.settings import Settings

__all__ = ["CpuMeter", "postgres_processes"]


def _cpu_seconds(procs: list[psutil.Process]) -> float:
    total = 0.0
    for p in procs:
        with contextlib.suppress(psutil.Error):
            t = p.cpu_times()
            total += t.user + t.system
    return total


def _tree(proc: psutil.Process) -> list[psutil.Process]:
    with contextlib.suppress(psutil.Error):
        return [proc, *proc.children(recursive=True)]
    return [proc]


def postgres_processes(settings: Settings) -> list[psutil.Process]:
    """This runtime's postmaster (its data directory is on its command line) and its backends."""
    marker = str(settings.pg_dir)
    found = []
    for p in psutil.process_iter(["cmdline"]):
        with contextlib.suppress(psutil.Error):
            if marker in " ".join(p.info["cmdline"] or ()):
                found += _tree(p)
    return found


class CpuMeter:
    """Snapshots of CPU seconds per process group; `end` returns each group's seconds since
    `begin`. Process trees are listed at each snapshot, so a backend or API worker started
    mid-run counts from zero: no baseline is missing for it."""

    def __init__(self, supervisor: Any, *, include_self: bool = False) -> None:
        self.children = {c.name: psutil.Process(c.proc.pid) for c in supervisor.children}
        broker = getattr(supervisor.broker, "_proc", None)  # the embedded broker's process
        self.broker = psutil.Process(broker.pid) if broker is not None else None
        self.own = psutil.Process(os.getpid()) if include_self else None
        self.settings = supervisor.settings
        self.start: dict[str, float] = {}

    def _snapshot(self) -> dict[str, list[psutil.Process]]:
        groups = {name: _tree(p) for name, p in self.children.items()}
        if self.broker is not None:
            groups["broker"] = [self.broker]
        groups["postgres"] = postgres_processes(self.settings)
        if self.own is not None:
            groups["bench"] = [self.own]  # threads included, its children not
        return groups

    def _seconds(self) -> dict[str, float]:
        return {name: _cpu_seconds(procs) for name, procs in self._snapshot().items()}

    def begin(self) -> None:
        self.start = self._seconds()

    def end(self) -> dict[str, float]:
        now = self._seconds()
        return {name: now[name] - self.start.get(name, 0.0) for name in now}
