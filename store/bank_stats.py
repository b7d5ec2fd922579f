"""Counts that describe one bank."""

from __future__ import annotations

from typing import Any

import asyncpg

__all__ = ["bank_stats"]


async def bank_stats(pool: asyncpg.Pool, bank_id: str) -> dict[str, Any]:
    async with pool.acquire() as conn:
        # Counters kept by triggers (migrations/0006): `tempr ingest --wait` polls this.
        by_type = await conn.fetch(
            "SELECT fact_type, n FROM bank_fact_counts WHERE bank_id = $1 AND n > 0 ORDER BY fact_type",
            bank_id,
        )
        links = await conn.fetch(
            "SELECT link_type, n FROM bank_link_counts WHERE bank_id = $1 AND n > 0 ORDER BY link_type",
            bank_id,
        )
        row = await conn.fetchrow(
            """
            SELECT
              (SELECT count(*) FROM entities WHERE bank_id = $1) AS entities,
              (SELECT count(*) FROM documents WHERE bank_id = $1) AS documents,
              (SELECT count(*) FROM messages WHERE bank_id = $1) AS messages,
              (SELECT count(*) FROM messages WHERE bank_id = $1 AND processed_at IS NULL AND parked_at IS NULL) AS pending,
              -- The materializer's last write, or the newest fact (an index probe, not a scan
              -- of the bank: max(updated_at) has no index and read 100k rows of a big bank).
              greatest((SELECT max(updated_at) FROM watermarks WHERE bank_id = $1),
                       (SELECT created_at FROM memory_units WHERE bank_id = $1
                        ORDER BY created_at DESC LIMIT 1)) AS last_update
            """,
            bank_id,
        )
    return {
        "facts_by_type": {r["fact_type"]: r["n"] for r in by_type},
        "facts": sum(r["n"] for r in by_type),
        "links_by_type": {r["link_type"]: r["n"] for r in links},
        "entities": row["entities"],
        "documents": row["documents"],
        "messages": row["messages"],
        "pending_events": row["pending"],
        "last_update": row["last_update"],
    }
