"""The audit log: one row per admin action, read newest first (needs the pool's JSON codecs)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import asyncpg

from tempr.store.keys import bank_visible

__all__ = ["list_audit", "record_audit"]


async def record_audit(
    conn: asyncpg.Connection | asyncpg.Pool,
    *,
    actor: str,
    action: str,
    bank_id: str | None,
    status: int | None,
    detail: dict[str, Any] | None = None,
) -> None:
    await conn.execute(
        "INSERT INTO audit_log (actor, action, bank_id, status, detail) VALUES ($1, $2, $3, $4, $5)",
        actor,
        action,
        bank_id,
        status,
        detail or {},
    )


async def list_audit(
    conn: asyncpg.Connection | asyncpg.Pool,
    *,
    limit: int,
    offset: int,
    bank_id: str | None = None,
    visible: Sequence[str] | None = None,
) -> list[asyncpg.Record]:
    """Newest first. `visible` (bank patterns) keeps rows of those banks only; None keeps all."""
    return await conn.fetch(
        f"""
        SELECT id, at, actor, action, bank_id, status, detail FROM audit_log
        WHERE ($3::text IS NULL OR bank_id = $3)
          AND ($4::text[] IS NULL OR (bank_id IS NOT NULL AND {bank_visible("bank_id", 4)}))
        ORDER BY at DESC, id DESC LIMIT $1 OFFSET $2
        """,
        limit,
        offset,
        bank_id,
        None if visible is None else list(visible),
    )
