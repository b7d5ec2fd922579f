"""Service-wide counts for monitoring (cheap: indexed or small tables)."""

from __future__ import annotations

import asyncpg

__all__ = ["service_counts"]


async def service_counts(pool: asyncpg.Pool) -> dict[str, int]:
    row = await pool.fetchrow(
        """
        SELECT
          (SELECT count(*) FROM messages WHERE processed_at IS NULL) AS pending_messages,
          (SELECT count(*) FROM dead_letters WHERE replayed_at IS NULL) AS dead_letters,
          (SELECT count(*) FROM banks) AS banks
        """
    )
    assert row is not None
    return dict(row)
