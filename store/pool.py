"""The asyncpg pool: pgvector and JSON codecs registered once per connection."""

from __future__ import annotations

import json

import asyncpg
from pgvector.asyncpg import register_vector

__all__ = ["connect", "create_pool"]


async def _init_connection(conn: asyncpg.Connection) -> None:
    await register_vector(conn)
    for typ in ("json", "jsonb"):
        await conn.set_type_codec(typ, encoder=json.dumps, decoder=json.loads, schema="pg_catalog")


# A prepared statement's generic plan sees `bank_id = $1` and cannot use a bank's partial
# HNSW index (store/vector_indexes.py); custom plans see the value. Planning these queries
# costs well under a millisecond, parsing is still cached.
_SERVER_SETTINGS = {"plan_cache_mode": "force_custom_plan"}


async def create_pool(dsn: str, *, min_size: int = 1, max_size: int = 10) -> asyncpg.Pool:
    pool = await asyncpg.create_pool(
        dsn,
        min_size=min_size,
        max_size=max_size,
        init=_init_connection,
        command_timeout=60,
        server_settings=_SERVER_SETTINGS,
    )
    assert pool is not None
    return pool


async def connect(dsn: str) -> asyncpg.Connection:
    conn = await asyncpg.connect(dsn, server_settings=_SERVER_SETTINGS)
    await _init_connection(conn)
    return conn
