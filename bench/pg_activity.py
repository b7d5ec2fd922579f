"""What Postgres's backends do during a bench: `pg_stat_activity` sampled every 0.1 s from a
thread of its own. Counts samples per (state, wait event, statement's first words), so a lock
convoy (`Lock/transactionid`, `Lock/tuple`) or a statement that is always running shows up.

    with PgActivity(database_url) as activity:
        ...
    activity.summary()
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import Counter
from typing import Any

import asyncpg

__all__ = ["PgActivity"]

_QUERY = """
    SELECT state, coalesce(wait_event_type || '/' || wait_event, 'on CPU') AS waiting,
           regexp_replace(left(query, 70), '\\s+', ' ', 'g') AS statement
    FROM pg_stat_activity
    WHERE datname = current_database() AND pid <> pg_backend_pid() AND state NOT IN ('idle')
"""


class PgActivity:
    def __init__(self, url: str, interval_s: float = 0.1) -> None:
        self.url = url
        self.interval_s = interval_s
        self.samples = 0
        self.seen: Counter[tuple[str, str, str]] = Counter()
        self.lock_waits: list[float] = []  # when a backend waited on a lock
        self._stop = threading.Event()
        self._thread = threading.Thread(target=lambda: asyncio.run(self._run()), daemon=True)

    async def _run(self) -> None:
        conn = await asyncpg.connect(self.url)
        started = time.perf_counter()
        try:
            while not self._stop.is_set():
                for row in await conn.fetch(_QUERY):
                    self.seen[(row["state"], row["waiting"], row["statement"].strip())] += 1
                    if row["waiting"].startswith("Lock/"):
                        self.lock_waits.append(time.perf_counter() - started)
                self.samples += 1
                await asyncio.sleep(self.interval_s)
        finally:
            await conn.close()

    def __enter__(self) -> PgActivity:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(30)

    def summary(self, top: int = 12) -> dict[str, Any]:
        """Per (state, wait, statement): the share of samples in which a backend was so."""
        n = self.samples or 1
        return {
            "samples": self.samples,
            "busy_backends_mean": sum(self.seen.values()) / n,
            "lock_wait_share": len(self.lock_waits) / n,
            "top": [[*key, count / n] for key, count in self.seen.most_common(top)],
        }
