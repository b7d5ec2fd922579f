"""The retention sweeper: forgets what banks keep no longer (`message_retention_days`,
`fact_retention_days` in a bank's config).

It runs in the worker, on the Faust leader only, every `TEMPR_RETENTION_SWEEP_INTERVAL_S`; a
Postgres advisory lock makes it one sweeper at a time even across several worker replicas or
a leader that changes mid-sweep. Each batch is one transaction under the bank's rewrite lock,
with the same tombstones as forgetting by hand, so a crash leaves whole batches done or not.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import asyncpg
import faust

from tempr.store import bank_locks, retention
from tempr.store.audit import record_audit
from tempr.streams.context import WorkerContext
from tempr.streams.stage import Topics

__all__ = ["Swept", "register", "sweep_retention"]

log = logging.getLogger(__name__)

_BATCH = 1000


@dataclass
class Swept:
    messages: dict[str, int] = field(default_factory=dict)
    facts: dict[str, int] = field(default_factory=dict)
    ran: bool = True  # False: another sweeper held the lock


async def sweep_retention(pool: asyncpg.Pool, *, batch: int = _BATCH) -> Swept:
    swept = Swept()
    # The lock lives in a transaction of its own connection (it writes nothing): it ends with
    # that transaction, however the sweep ends, also on a pool that does not reset sessions.
    async with pool.acquire() as lock_conn, lock_conn.transaction():
        if not await lock_conn.fetchval("SELECT pg_try_advisory_xact_lock($1)", retention.RETENTION_LOCK):
            return Swept(ran=False)
        for bank in await retention.banks_with_retention(pool):
            if bank["message_days"] is not None:
                swept.messages[bank["id"]] = await _drain(
                    pool, bank["id"], bank["message_days"], batch, facts=False
                )
            if bank["fact_days"] is not None:
                swept.facts[bank["id"]] = await _drain(pool, bank["id"], bank["fact_days"], batch, facts=True)
    return swept


async def _drain(pool: asyncpg.Pool, bank_id: str, days: int, batch: int, *, facts: bool) -> int:
    total = 0
    while True:
        async with pool.acquire() as conn, conn.transaction():
            await bank_locks.lock_bank_for_rewrite(conn, bank_id)
            if facts:
                done = await retention.expire_facts(conn, bank_id, days, limit=batch)
                count = done.facts + done.observations
            else:
                done = await retention.expire_messages(conn, bank_id, days, limit=batch)
                count = done.messages
            if count:  # forgotten without a request: the audit row says by whom
                await record_audit(
                    conn,
                    actor="retention",
                    action=f"RETENTION {'facts' if facts else 'messages'}",
                    bank_id=bank_id,
                    status=None,
                    detail={"forgotten": count, "older_than_days": days},
                )
        total += count
        if count < batch:
            return total


def register(app: faust.App, topics: Topics, ctx: WorkerContext) -> None:
    @app.timer(interval=ctx.settings.retention_sweep_interval_s, on_leader=True)
    async def forget_expired() -> None:
        if not ctx.ready.is_set():
            return
        try:
            swept = await sweep_retention(ctx.db)
        except Exception as exc:  # the database is down: the next sweep tries again
            log.warning("the retention sweep failed: %r", exc)
            return
        if swept.messages or swept.facts:
            log.info("retention: messages forgotten %s, facts forgotten %s", swept.messages, swept.facts)
