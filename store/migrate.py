"""Apply `migrations/*.sql` in order, once each, safely when several processes start at once.

A session-level advisory lock serializes concurrent migrators; each file runs in its own
transaction and is recorded in `schema_migrations`.
"""

from __future__ import annotations

import logging
from importlib import resources

import asyncpg

__all__ = ["apply_migrations", "migration_files"]

log = logging.getLogger(__name__)
_LOCK_KEY = 0x7E3B_0001


def migration_files() -> list[tuple[str, str]]:
    files = resources.files("tempr.migrations")
    named = sorted(f.name for f in files.iterdir() if f.name.endswith(".sql"))
    return [(name, files.joinpath(name).read_text()) for name in named]


async def apply_migrations(dsn: str) -> list[str]:
    """Returns the names applied by this call (empty when the schema was current)."""
    conn = await asyncpg.connect(dsn)
    applied: list[str] = []
    try:
        await conn.execute("SELECT pg_advisory_lock($1)", _LOCK_KEY)
        try:
            await conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations ("
                " name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())"
            )
            done = {r["name"] for r in await conn.fetch("SELECT name FROM schema_migrations")}
            for name, sql in migration_files():
                if name in done:
                    continue
                async with conn.transaction():
                    await conn.execute(sql)
                    await conn.execute("INSERT INTO schema_migrations (name) VALUES ($1)", name)
                applied.append(name)
                log.info("applied migration %s", name)
        finally:
            await conn.execute("SELECT pg_advisory_unlock($1)", _LOCK_KEY)
    finally:
        await conn.close()
    return applied
