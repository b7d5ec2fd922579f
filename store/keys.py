"""API keys: insert, find by id, list, revoke; and the SQL test of "which banks a key sees"."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import asyncpg

__all__ = ["bank_visible", "count_keys", "find_key", "insert_key", "list_keys", "revoke_key"]

_COLUMNS = "id, name, scopes, banks, rate_limit_per_min, created_at, created_by, expires_at, revoked_at"


def bank_visible(column: str, param: int) -> str:
    """A WHERE fragment: `column` (a bank id) matches one of the patterns bound at `$param`
    (text[]: exact ids, prefixes ending in '*', or '*'); a NULL array means every bank."""
    return (
        f"(${param}::text[] IS NULL OR EXISTS (SELECT 1 FROM unnest(${param}::text[]) AS p(pattern)"
        f" WHERE p.pattern = '*' OR p.pattern = {column}"
        f" OR (right(p.pattern, 1) = '*' AND starts_with({column}, left(p.pattern, -1)))))"
    )


async def insert_key(
    conn: asyncpg.Connection | asyncpg.Pool,
    *,
    key_id: str,
    name: str,
    secret_hash: bytes,
    scopes: Sequence[str],
    banks: Sequence[str],
    created_by: str,
    expires_at: datetime | None,
    rate_limit_per_min: float | None,
) -> asyncpg.Record:
    """Raises asyncpg.UniqueViolationError when a live key already has this name."""
    return await conn.fetchrow(
        f"""
        INSERT INTO api_keys (id, name, secret_hash, scopes, banks, created_by, expires_at, rate_limit_per_min)
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
        RETURNING {_COLUMNS}
        """,
        key_id,
        name,
        secret_hash,
        list(scopes),
        list(banks),
        created_by,
        expires_at,
        rate_limit_per_min,
    )


async def find_key(conn: asyncpg.Connection | asyncpg.Pool, key_id: str) -> asyncpg.Record | None:
    """The row with its secret hash, whatever its state (the caller checks revoked/expired)."""
    return await conn.fetchrow(f"SELECT {_COLUMNS}, secret_hash FROM api_keys WHERE id = $1", key_id)


async def list_keys(
    conn: asyncpg.Connection | asyncpg.Pool, *, include_revoked: bool = False
) -> list[asyncpg.Record]:
    return await conn.fetch(
        f"SELECT {_COLUMNS} FROM api_keys WHERE $1 OR revoked_at IS NULL ORDER BY created_at, id",
        include_revoked,
    )


async def count_keys(conn: asyncpg.Connection | asyncpg.Pool) -> int:
    """Every key ever made, revoked ones included: zero only before the first start with keys."""
    return await conn.fetchval("SELECT count(*) FROM api_keys")


async def revoke_key(conn: asyncpg.Connection | asyncpg.Pool, id_or_name: str) -> asyncpg.Record | None:
    """Revokes the live key with this id or name; None when there is none."""
    return await conn.fetchrow(
        f"""
        UPDATE api_keys SET revoked_at = now()
        WHERE (id = $1 OR name = $1) AND revoked_at IS NULL
        RETURNING {_COLUMNS}
        """,
        id_or_name,
    )
