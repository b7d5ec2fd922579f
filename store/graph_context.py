"""What the resolver needs to see of a bank: its entities and the facts new ones may link to."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from uuid import UUID

import asyncpg
import numpy as np

__all__ = ["entity_neighbours", "known_entities", "semantic_neighbours", "temporal_neighbours"]

_POINT_COLUMNS = """
    u.id, coalesce(u.occurred_start, u.mentioned_at) AS when_at, u.embedding,
    coalesce((SELECT array_agg(ue.entity_id) FROM unit_entities ue WHERE ue.unit_id = u.id),
             '{}'::uuid[]) AS entity_ids
"""


async def known_entities(conn: asyncpg.Connection | asyncpg.Pool, bank_id: str) -> list[asyncpg.Record]:
    return await conn.fetch(
        """
        SELECT id, canonical_name, kind, aliases, mention_count, last_seen
        FROM entities WHERE bank_id = $1
        """,
        bank_id,
    )


async def temporal_neighbours(
    conn: asyncpg.Connection | asyncpg.Pool,
    bank_id: str,
    start: datetime,
    end: datetime,
    *,
    window: timedelta = timedelta(hours=24),
    limit: int = 400,
) -> list[asyncpg.Record]:
    return await conn.fetch(
        f"""
        SELECT {_POINT_COLUMNS} FROM memory_units u
        WHERE u.bank_id = $1
          AND coalesce(u.occurred_start, u.mentioned_at) BETWEEN $2::timestamptz - $4::interval
                                                             AND $3::timestamptz + $4::interval
        ORDER BY coalesce(u.occurred_start, u.mentioned_at) DESC
        LIMIT $5
        """,
        bank_id,
        start,
        end,
        window,
        limit,
    )


async def semantic_neighbours(
    conn: asyncpg.Connection | asyncpg.Pool,
    bank_id: str,
    embedding: Sequence[float],
    *,
    min_cosine: float = 0.7,
    limit: int = 10,
) -> list[asyncpg.Record]:
    vector = np.asarray(embedding, dtype=np.float32)
    return await conn.fetch(
        f"""
        SELECT {_POINT_COLUMNS} FROM memory_units u
        WHERE u.bank_id = $1 AND u.embedding IS NOT NULL AND 1 - (u.embedding <=> $2) >= $3
        ORDER BY u.embedding <=> $2
        LIMIT $4
        """,
        bank_id,
        vector,
        min_cosine,
        limit,
    )


async def entity_neighbours(
    conn: asyncpg.Connection | asyncpg.Pool,
    bank_id: str,
    entity_ids: Sequence[UUID],
    *,
    per_entity: int = 10,
) -> list[asyncpg.Record]:
    """The most recent facts of each entity (high-fanout entities stay bounded)."""
    if not entity_ids:
        return []
    return await conn.fetch(
        f"""
        SELECT {_POINT_COLUMNS} FROM memory_units u
        WHERE u.id IN (
            SELECT unit_id FROM (
                SELECT ue.unit_id, row_number() OVER (
                    PARTITION BY ue.entity_id
                    ORDER BY coalesce(m.occurred_start, m.mentioned_at) DESC NULLS LAST) AS r
                FROM unit_entities ue JOIN memory_units m ON m.id = ue.unit_id
                WHERE ue.bank_id = $1 AND ue.entity_id = ANY($2::uuid[])
            ) ranked WHERE r <= $3)
        """,
        bank_id,
        list(entity_ids),
        per_entity,
    )
