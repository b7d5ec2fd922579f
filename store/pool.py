"""The asyncpg pool: pgvector and JSON codecs registered once per connection."""

from __future__ import annotations

import json

import asyncpg
from pgvector.asyncpg import register_vector

__all__ = ["connect", "create_pool", "reachable"]


async def _init_connection(conn: asyncpg.Connection) -> None:
    await register_vector(conn)
    for typ in ("json", "jsonb"):
        await conn.set_type_codec(typ, encoder=json.dumps, decoder=json.loads, schema="pg_catalog")


# A prepared statement's generic plan sees `bank_id = $1` and cannot use a bank's partial
# HNSW index (store/vector_indexes.py); custom plans see the value. Planning these queries
# costs well under a millisecond, parsing is still cached.
# A lookup that does not size ef_search itself (ingest's neighbours: 10 nearest) gets more
# than pgvector's 40, which left 9 of 10 neighbours unfound in a 100k bank of near-duplicates.
_SERVER_SETTINGS = {"plan_cache_mode": "force_custom_plan", "hnsw.ef_search": "100"}


async def _keep_session(conn: asyncpg.Connection) -> None:
    """Release without asyncpg's reset statement (advisory unlock, CLOSE ALL, UNLISTEN, RESET
    ALL): asyncpg still rolls back an open transaction and drops listeners first."""


async def create_pool(
    dsn: str, *, min_size: int = 1, max_size: int = 10, reset_sessions: bool = True
) -> asyncpg.Pool:
    """``reset_sessions=False`` for a pool whose users leave no session state behind (settings
    set transaction-locally, advisory locks transaction-scoped or on connections of their own):
    the reset is a round trip and four statements on every release, 8 % of the API's event loop
    at 16 concurrent recalls (docs/benchmarks.md, "Scale", "Stop 16")."""
    pool = await asyncpg.create_pool(
        dsn,
        min_size=min_size,
        max_size=max_size,
        init=_init_connection,
        reset=None if reset_sessions else _keep_session,
        command_timeout=60,
        server_settings=_SERVER_SETTINGS,
    )
    assert pool is not None
    return pool


async def connect(dsn: str) -> asyncpg.Connection:
    conn = await asyncpg.connect(dsn, server_settings=_SERVER_SETTINGS)
    await _init_connection(conn)
    return conn


async def reachable(pool: asyncpg.Pool, *, timeout_s: float = 5.0) -> bool:
    """Whether the database answers now (a fresh connection if the pool's are broken)."""
    try:
        async with pool.acquire(timeout=timeout_s) as conn:
            await conn.fetchval("SELECT 1", timeout=timeout_s)
    except Exception:
        return False
    return True
