"""The maintenance step: per-bank vector indexes and keyword statistics, kept in the background.

It runs in every API process; an advisory lock lets one build at a time (store/vector_indexes.py),
and a process that finds the lock taken skips its turn. Builds are CONCURRENTLY: retains and
recalls go on meanwhile, recall scanning the bank exactly until its index is listed.
"""

from __future__ import annotations

import asyncio
import logging

from tempr.settings import Settings
from tempr.store import keyword_indexes, keyword_stats, vector_indexes
from tempr.store.pool import connect

__all__ = ["maintain_once", "maintenance_loop"]

log = logging.getLogger(__name__)


async def maintain_once(dsn: str, min_facts: int, *, build_memory_mb: int) -> list[str]:
    """One pass; returns what changed, as readable lines. Its own connection: a build may
    take minutes and must not hold a pool connection. Its builds may use ``build_memory_mb``
    of memory (`Settings.index_build_memory_mb`)."""
    conn = await connect(dsn)
    try:
        async with vector_indexes.maintenance_lock(conn) as held:
            if not held:
                return []
            # This session's only: the connection is closed after the pass.
            await conn.execute("SELECT set_config('maintenance_work_mem', $1, false)", f"{build_memory_mb}MB")
            changes = [
                f"{c.action} the vector index of {c.bank_id} ({c.facts} facts)"
                for c in await vector_indexes.maintain(conn, min_facts=min_facts)
            ]
            refreshed = await keyword_stats.maintain(conn, min_facts=min_facts)
            changes += [f"counted the lexemes of {bank} ({facts} facts)" for bank, facts in refreshed]
            return changes + [
                f"{action} the keyword index of {bank}"
                for bank, action in await keyword_indexes.maintain(conn)
            ]
    finally:
        await conn.close()


async def maintenance_loop(settings: Settings) -> None:
    assert settings.database_url
    interval = settings.index_maintenance_interval_s
    while True:
        await asyncio.sleep(interval)
        try:
            for change in await maintain_once(
                settings.database_url,
                settings.bank_index_min_facts,
                build_memory_mb=settings.index_build_memory_mb,
            ):
                log.info("maintenance: %s", change)
        except Exception:  # a failed build is retried next time; recall stays exact meanwhile
            log.exception("maintenance pass failed")
