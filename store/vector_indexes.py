"""Per-bank HNSW indexes: how a big bank gets vector search of its own.

pgvector 0.6 has no iterative index scan, so an index shared by every bank returns the
``ef_search`` nearest rows of *all* banks, and a bank filter applied after it leaves few or
none. A partial index ``WHERE bank_id = '<bank>'`` holds one bank's rows only, so its scan is
as good as HNSW gets. Banks below ``min_facts`` are scanned exactly (their btree range is small).

The partial index is found by the planner only when the query's bank is a constant at plan
time; the pool sets ``plan_cache_mode = force_custom_plan`` (store/pool.py), so a prepared
statement's ``bank_id = $1`` is planned with its value each time.

`maintain` runs in the API process (recall_api/index_maintenance.py) under `maintenance_lock`,
so among several API workers and replicas one builds at a time; ``CREATE INDEX CONCURRENTLY``
does not block writes. An index is listed in ``bank_vector_indexes`` only once it is valid;
recall reads that list (through `bank_shape`).
"""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import asyncpg

__all__ = [
    "IndexChange",
    "bank_index_name",
    "build_bank_index",
    "drop_bank_index",
    "maintain",
    "maintenance_lock",
]

_LOCK_KEY = 0x7E3B_0016
# Denser than pgvector's default (16, 64): on a 100k bank of near-duplicate clusters the
# default graph's top 50 at ef_search 300 overlapped an exact scan by 0.64 for one query,
# (32, 128)'s by 0.94 (mean 0.998; docs/scaling.md). Builds vary: one (32, 128) graph left a
# question's whole region out of reach, 0.18 of the exact top 50 at every ef_search up to
# 1,000; at ef_construction 256 eight builds gave 0.98 at 300 and 1.00 at 500, for
# ~1.2x the build time (docs/benchmarks.md, "Stop 31").
_M = 32
_EF_CONSTRUCTION = 256


@dataclass(frozen=True, slots=True)
class IndexChange:
    bank_id: str
    action: str  # "built" or "dropped"
    facts: int


def bank_index_name(bank_id: str) -> str:
    """A stable identifier for any bank id (bank ids are free text)."""
    return "memory_units_hnsw_" + hashlib.sha1(bank_id.encode()).hexdigest()[:20]


async def build_bank_index(conn: asyncpg.Connection, bank_id: str, facts: int) -> str:
    """Build (concurrently) and register the bank's partial HNSW index. Must run outside a
    transaction. A build that failed earlier left an invalid index: it is dropped first."""
    name = bank_index_name(bank_id)
    # The predicate must be a literal; Postgres quotes it (no client-side escaping).
    literal = await conn.fetchval("SELECT quote_literal($1::text)", bank_id)
    await conn.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {name}")
    await conn.execute(
        f"CREATE INDEX CONCURRENTLY {name} ON memory_units USING hnsw (embedding vector_cosine_ops) "
        f"WITH (m = {_M}, ef_construction = {_EF_CONSTRUCTION}) "
        f"WHERE bank_id = {literal} AND embedding IS NOT NULL"
    )
    await conn.execute(
        """
        INSERT INTO bank_vector_indexes (bank_id, index_name, facts_at_build) VALUES ($1, $2, $3)
        ON CONFLICT (bank_id) DO UPDATE SET index_name = $2, facts_at_build = $3, built_at = now()
        """,
        bank_id,
        name,
        facts,
    )
    return name


async def drop_bank_index(conn: asyncpg.Connection, bank_id: str) -> None:
    """Unlist first, so no recall plans for an index that is going away."""
    await conn.execute("DELETE FROM bank_vector_indexes WHERE bank_id = $1", bank_id)
    await conn.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {bank_index_name(bank_id)}")


@asynccontextmanager
async def maintenance_lock(conn: asyncpg.Connection) -> AsyncIterator[bool]:
    """Whether this session got the maintenance lock (one maintainer at a time, cluster-wide)."""
    held = bool(await conn.fetchval("SELECT pg_try_advisory_lock($1)", _LOCK_KEY))
    try:
        yield held
    finally:
        if held:
            await conn.execute("SELECT pg_advisory_unlock($1)", _LOCK_KEY)


async def maintain(conn: asyncpg.Connection, *, min_facts: int) -> list[IndexChange]:
    """Index every bank of at least ``min_facts`` facts; drop the index of a bank that shrank
    below half of it (hysteresis: a bank near the line is not rebuilt back and forth).
    Returns what changed. Callers hold `maintenance_lock`."""
    rows = await conn.fetch(
        """
        WITH sizes AS (SELECT bank_id, sum(n)::int AS facts FROM bank_fact_counts GROUP BY bank_id)
        SELECT coalesce(s.bank_id, i.bank_id) AS bank_id, coalesce(s.facts, 0) AS facts,
               i.bank_id IS NOT NULL AS indexed
        FROM sizes s FULL JOIN bank_vector_indexes i ON i.bank_id = s.bank_id
        WHERE (i.bank_id IS NULL AND s.facts >= $1)
           OR (i.bank_id IS NOT NULL AND coalesce(s.facts, 0) < $1 / 2)
        ORDER BY facts DESC
        """,
        min_facts,
    )
    changes = []
    for r in rows:
        if r["indexed"]:
            await drop_bank_index(conn, r["bank_id"])
            changes.append(IndexChange(r["bank_id"], "dropped", r["facts"]))
        else:
            await build_bank_index(conn, r["bank_id"], r["facts"])
            changes.append(IndexChange(r["bank_id"], "built", r["facts"]))
    return changes
