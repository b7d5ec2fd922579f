"""Reads behind the console's memory browser: a filtered page of facts, a fact's provenance."""

from __future__ import annotations

from collections.abc import Sequence
from uuid import UUID

import asyncpg

from tempr.store.memories import UNIT_COLUMNS
from tempr.store.recall import RecallFilters, compile_filters

__all__ = ["browse_units", "fact", "source_messages"]

_ENTITY_NAMES = """
    coalesce((SELECT array_agg(e.canonical_name ORDER BY e.canonical_name)
              FROM unit_entities ue JOIN entities e ON e.id = ue.entity_id
              WHERE ue.unit_id = u.id), '{}') AS entities
"""


def _where(filters: RecallFilters, text: str | None, first: int) -> tuple[str, list[object]]:
    where, params = compile_filters(filters, first)
    if text:
        params.append(text)
        # strpos, not LIKE: the user's % and _ are text, not wildcards.
        where += f" AND strpos(lower(u.text), lower(${first + len(params) - 1}::text)) > 0"
    return where, params


async def browse_units(
    pool: asyncpg.Pool, bank_id: str, *, filters: RecallFilters, text: str | None, limit: int, offset: int
) -> tuple[list[asyncpg.Record], int]:
    """One page of the bank's facts passing the filters (oldest first), and how many pass."""
    where, params = _where(filters, text, 4)
    count_where, count_params = _where(filters, text, 2)
    columns = ", ".join(f"u.{c.strip()}" for c in UNIT_COLUMNS.split(","))
    async with pool.acquire() as conn:
        rows = await conn.fetch(
            f"""
            SELECT {columns}, {_ENTITY_NAMES} FROM memory_units u
            WHERE u.bank_id = $1{where}
            ORDER BY u.created_at, u.id
            LIMIT $2 OFFSET $3
            """,
            bank_id,
            limit,
            offset,
            *params,
        )
        total = await conn.fetchval(
            f"SELECT count(*) FROM memory_units u WHERE u.bank_id = $1{count_where}", bank_id, *count_params
        )
    return list(rows), int(total)


async def fact(pool: asyncpg.Pool, bank_id: str, unit_id: UUID) -> asyncpg.Record | None:
    columns = ", ".join(f"u.{c.strip()}" for c in UNIT_COLUMNS.split(","))
    return await pool.fetchrow(
        f"SELECT {columns}, {_ENTITY_NAMES} FROM memory_units u WHERE u.bank_id = $1 AND u.id = $2",
        bank_id,
        unit_id,
    )


async def source_messages(
    pool: asyncpg.Pool, bank_id: str, message_ids: Sequence[str]
) -> list[asyncpg.Record]:
    """The journaled messages a fact came from, as they arrived."""
    return await pool.fetch(
        """
        SELECT message_id, conversation_id, document_id, payload, received_at, processed_at
        FROM messages WHERE bank_id = $1 AND message_id = ANY($2::text[])
        ORDER BY received_at, seq
        """,
        bank_id,
        list(message_ids),
    )
