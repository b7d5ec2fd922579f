"""The pipeline as the journal tells it: messages accepted and materialized per minute, and
what waits, per bank. Filtered to the banks a caller may see."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import asyncpg

from tempr.store.keys import bank_visible

__all__ = ["pending_by_bank", "per_minute"]


async def per_minute(
    pool: asyncpg.Pool, *, minutes: int, visible: Sequence[str] | None
) -> list[tuple[datetime, int, int]]:
    """``(minute, accepted, materialized)`` for each of the last ``minutes`` minutes, oldest first."""
    rows = await pool.fetch(
        f"""
        WITH minutes AS (
            SELECT generate_series(date_trunc('minute', now()) - ($1 - 1) * interval '1 minute',
                                   date_trunc('minute', now()), interval '1 minute') AS minute
        ), recent AS (
            SELECT received_at, processed_at FROM messages
            WHERE (received_at >= now() - $1 * interval '1 minute'
                   OR processed_at >= now() - $1 * interval '1 minute')
              AND {bank_visible("bank_id", 2)}
        )
        SELECT m.minute,
               count(*) FILTER (WHERE date_trunc('minute', r.received_at) = m.minute) AS accepted,
               count(*) FILTER (WHERE date_trunc('minute', r.processed_at) = m.minute) AS materialized
        FROM minutes m LEFT JOIN recent r
          ON date_trunc('minute', r.received_at) = m.minute OR date_trunc('minute', r.processed_at) = m.minute
        GROUP BY m.minute ORDER BY m.minute
        """,
        minutes,
        None if visible is None else list(visible),
    )
    return [(r["minute"], r["accepted"], r["materialized"]) for r in rows]


async def pending_by_bank(pool: asyncpg.Pool, *, visible: Sequence[str] | None) -> list[asyncpg.Record]:
    """Accepted, not materialized and not parked: ``(bank_id, pending, oldest)``, most first."""
    return await pool.fetch(
        f"""
        SELECT bank_id, count(*) AS pending, min(received_at) AS oldest FROM messages
        WHERE processed_at IS NULL AND parked_at IS NULL AND {bank_visible("bank_id", 1)}
        GROUP BY bank_id ORDER BY count(*) DESC, bank_id LIMIT 100
        """,
        None if visible is None else list(visible),
    )
