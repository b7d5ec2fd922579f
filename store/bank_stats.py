"""Counts that describe one bank."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import asyncpg

from tempr.store.keys import bank_visible

__all__ = ["bank_stats", "banks_overview"]


async def bank_stats(pool: asyncpg.Pool, bank_id: str) -> dict[str, Any]:
    async with pool.acquire() as conn:
        # Counters kept by triggers (migrations/0005): `tempr ingest --wait` polls this.
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


async def banks_overview(
    pool: asyncpg.Pool, *, visible: Sequence[str] | None, search: str | None, limit: int, offset: int
) -> tuple[list[asyncpg.Record], int]:
    """A page of banks (by id) whose id or name contains ``search``, each with its counts, and
    how many match. Counts are read for the page's banks only."""
    rows = await pool.fetch(
        f"""
        WITH matching AS (
            SELECT b.id, coalesce(b.name, b.id) AS name, count(*) OVER () AS total
            FROM banks b
            WHERE {bank_visible("b.id", 1)}
              AND ($2::text IS NULL OR strpos(lower(b.id), lower($2)) > 0
                   OR strpos(lower(coalesce(b.name, '')), lower($2)) > 0)
            ORDER BY b.id LIMIT $3 OFFSET $4
        )
        SELECT m.id, m.name, m.total,
          (SELECT count(*) FROM memory_units u WHERE u.bank_id = m.id) AS facts,
          (SELECT count(*) FROM entities e WHERE e.bank_id = m.id) AS entities,
          -- Through the bank's facts (links never cross banks): index probes, not a scan of
          -- every bank's links per row.
          (SELECT coalesce(jsonb_object_agg(link_type, n), '{{}}') FROM
             (SELECT l.link_type, count(*) AS n FROM memory_units u JOIN memory_links l ON l.from_id = u.id
              WHERE u.bank_id = m.id GROUP BY l.link_type) x) AS links_by_type,
          (SELECT count(*) FROM documents d WHERE d.bank_id = m.id) AS documents,
          (SELECT count(*) FROM messages g WHERE g.bank_id = m.id
             AND g.processed_at IS NULL AND g.parked_at IS NULL) AS pending,
          (SELECT max(u.updated_at) FROM memory_units u WHERE u.bank_id = m.id) AS last_update
        FROM matching m ORDER BY m.id
        """,
        None if visible is None else list(visible),
        search or None,
        limit,
        offset,
    )
    total = rows[0]["total"] if rows else await _count_matching(pool, visible, search)
    return list(rows), int(total)


async def _count_matching(pool: asyncpg.Pool, visible: Sequence[str] | None, search: str | None) -> int:
    # Only past the last page (or with nothing at all): the page query carries the count otherwise.
    return await pool.fetchval(
        f"""
        SELECT count(*) FROM banks b WHERE {bank_visible("b.id", 1)}
          AND ($2::text IS NULL OR strpos(lower(b.id), lower($2)) > 0
               OR strpos(lower(coalesce(b.name, '')), lower($2)) > 0)
        """,
        None if visible is None else list(visible),
        search or None,
    )
