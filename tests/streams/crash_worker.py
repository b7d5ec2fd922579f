"""One delivery of a batch in a worker process of its own, for the poison-counter tests:

    python -m tests.streams.crash_worker DATABASE_URL MAX_ATTEMPTS POISON_ID ID...

The records are journal row ids; the stage's work kills this process with SIGKILL when it
reaches POISON_ID (a record that crashes the worker), and otherwise records the id as done.
What survives is printed as JSON: {"done": [...], "failed": {id: reason}}.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from typing import Any
from uuid import UUID

from tempr.store.pool import create_pool
from tempr.streams.inflight import CrashGuard


async def main(url: str, max_attempts: int, poison: UUID, ids: list[UUID]) -> dict[str, Any]:
    pool = await create_pool(url, max_size=2)
    done: list[str] = []
    failed: dict[str, str] = {}

    async def work(records: list[UUID]) -> None:
        for record in records:
            if record == poison:
                os.kill(os.getpid(), signal.SIGKILL)
        done.extend(str(r) for r in records)

    async def fail(record: UUID, reason: str) -> None:
        failed[str(record)] = reason

    try:
        await CrashGuard(max_attempts).run(pool, "stage", ids, lambda r: [r], work, fail)
    finally:
        await pool.close()
    return {"done": done, "failed": failed}


if __name__ == "__main__":
    url, max_attempts, poison, *ids = sys.argv[1:]
    result = asyncio.run(main(url, int(max_attempts), UUID(poison), [UUID(i) for i in ids]))
    print(json.dumps(result))
