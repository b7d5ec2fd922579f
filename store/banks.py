"""Banks: created on first retain, deleted with a tombstone."""

from __future__ import annotations

from collections.abc import Iterable

import asyncpg

__all__ = ["deleted_among", "ensure_banks"]


async def ensure_banks(conn: asyncpg.Connection, bank_ids: Iterable[str]) -> None:
    await conn.executemany(
        "INSERT INTO banks (id, name) VALUES ($1, $1) ON CONFLICT (id) DO NOTHING",
        [(b,) for b in sorted(set(bank_ids))],
    )


async def deleted_among(conn: asyncpg.Connection | asyncpg.Pool, bank_ids: Iterable[str]) -> set[str]:
    rows = await conn.fetch("SELECT id FROM deleted_banks WHERE id = ANY($1::text[])", sorted(set(bank_ids)))
    return {r["id"] for r in rows}
