"""What `tempr up` knows of its children, shared with the API through the data directory:
restarts per child (worker, api, postgres) and when they happened, so /health can tell a
crash-loop from a single restart."""

from __future__ import annotations

import os
import time
from pathlib import Path

from pydantic import BaseModel, Field

__all__ = ["CRASH_LOOP_RESTARTS", "CRASH_LOOP_WINDOW_S", "ChildRestarts", "RuntimeState"]

# This many restarts of one child within the window is a crash-loop.
CRASH_LOOP_RESTARTS = 3
CRASH_LOOP_WINDOW_S = 300.0
_FILE = "runtime.json"


class ChildRestarts(BaseModel):
    restarts: int = 0
    recent: list[float] = Field(default_factory=list)  # wall-clock times, last window only


class RuntimeState(BaseModel):
    children: dict[str, ChildRestarts] = Field(default_factory=dict)

    @classmethod
    def load(cls, data_dir: Path) -> RuntimeState:
        try:
            return cls.model_validate_json((data_dir / _FILE).read_text())
        except (OSError, ValueError):
            return cls()

    def save(self, data_dir: Path) -> None:
        path = data_dir / _FILE
        tmp = path.with_suffix(".tmp")
        tmp.write_text(self.model_dump_json())
        os.replace(tmp, path)  # readers never see half a file

    def restarted(self, child: str, now: float | None = None) -> int:
        now = time.time() if now is None else now
        entry = self.children.setdefault(child, ChildRestarts())
        entry.restarts += 1
        entry.recent = [t for t in entry.recent if now - t < CRASH_LOOP_WINDOW_S] + [now]
        return entry.restarts

    def crash_looping(self, now: float | None = None) -> list[str]:
        now = time.time() if now is None else now
        return [
            name
            for name, entry in self.children.items()
            if sum(1 for t in entry.recent if now - t < CRASH_LOOP_WINDOW_S) >= CRASH_LOOP_RESTARTS
        ]
