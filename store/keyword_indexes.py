"""Per-bank GIN indexes over the facts' words, for the banks with keyword statistics.

The shared GIN index holds every bank's postings: for a common word in a 1 M-fact table it
returns ten times the bank's matches, and the bank's 100k rows are then intersected with
them (12 of a 43 ms keyword search at 100k; 204 ms for the conjunctions of the MaxScore read,
store/keyword_bound.py). A partial index ``WHERE bank_id = '<bank>'`` holds the bank's own
postings; the planner picks it because the pool plans every statement with its values
(store/pool.py, as for the per-bank HNSW indexes of store/vector_indexes.py).

Built CONCURRENTLY by the maintenance step for each bank that has keyword statistics and
dropped when its statistics are (store/keyword_stats.py); listed in ``bank_keyword_indexes``
once valid. A fact written to such a bank updates two GIN indexes.
"""

from __future__ import annotations

import hashlib

import asyncpg

__all__ = ["bank_gin_name", "maintain"]


def bank_gin_name(bank_id: str) -> str:
    """A stable identifier for any bank id (bank ids are free text)."""
    return "memory_units_gin_" + hashlib.sha1(bank_id.encode()).hexdigest()[:20]


async def _build(conn: asyncpg.Connection, bank_id: str) -> None:
    name = bank_gin_name(bank_id)
    literal = await conn.fetchval("SELECT quote_literal($1::text)", bank_id)
    await conn.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {name}")  # a failed build left it invalid
    await conn.execute(
        f"CREATE INDEX CONCURRENTLY {name} ON memory_units USING gin (search) WHERE bank_id = {literal}"
    )
    await conn.execute(
        "INSERT INTO bank_keyword_indexes (bank_id, index_name) VALUES ($1, $2) ON CONFLICT (bank_id) DO NOTHING",
        bank_id,
        name,
    )


async def _drop(conn: asyncpg.Connection, bank_id: str) -> None:
    await conn.execute("DELETE FROM bank_keyword_indexes WHERE bank_id = $1", bank_id)
    await conn.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {bank_gin_name(bank_id)}")


async def maintain(conn: asyncpg.Connection) -> list[tuple[str, str]]:
    """Index the banks with keyword statistics and none yet, drop the indexes of banks without;
    returns ``(bank, "built" | "dropped")``. Outside a transaction; callers hold the
    maintenance lock (store/vector_indexes.py)."""
    rows = await conn.fetch(
        """
        SELECT coalesce(s.bank_id, i.bank_id) AS bank_id, s.bank_id IS NOT NULL AS wanted
        FROM bank_keyword_stats s FULL JOIN bank_keyword_indexes i ON i.bank_id = s.bank_id
        WHERE s.bank_id IS NULL OR i.bank_id IS NULL
        """
    )
    changes = []
    for r in rows:
        if r["wanted"]:
            await _build(conn, r["bank_id"])
        else:
            await _drop(conn, r["bank_id"])
        changes.append((r["bank_id"], "built" if r["wanted"] else "dropped"))
    return changes
