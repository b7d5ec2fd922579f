"""What the resolver needs to see of a bank: its entities and the facts new ones may link to."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from uuid import UUID

import asyncpg
import numpy as np

__all__ = [
    "entity_neighbours",
    "known_entities",
    "semantic_neighbours_of_many",
    "temporal_neighbours",
]

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


async def semantic_neighbours_of_many(
    conn: asyncpg.Connection | asyncpg.Pool,
    bank_id: str,
    embeddings: Sequence[Sequence[float]],
    *,
    min_cosine: float = 0.7,
    limit: int = 10,
) -> list[asyncpg.Record]:
    """The nearest facts (cosine ≥ ``min_cosine``, ``limit`` each) of every embedding at once,
    exactly: the bank's vectors are read
    once and scored against all of them (no index: a shared index filtered by bank can miss
    a small bank's neighbours). Each row is a neighbour with ``queries``, the 0-based positions
    of the embeddings it is among the nearest ``limit`` of."""
    if not embeddings:
        return []
    return await conn.fetch(
        f"""
        WITH q AS MATERIALIZED (
            SELECT i, v::vector AS v FROM unnest($2::text[]) WITH ORDINALITY AS q(v, i)
        ), scored AS MATERIALIZED (
            SELECT q.i, u.id, u.embedding <=> q.v AS d
            FROM q CROSS JOIN memory_units u
            WHERE u.bank_id = $1 AND u.embedding IS NOT NULL
        ), nearest AS (
            SELECT i, id, row_number() OVER (PARTITION BY i ORDER BY d, id) AS r
            FROM scored WHERE 1 - d >= $3
        )
        SELECT array_agg(n.i - 1 ORDER BY n.i) AS queries, {_POINT_COLUMNS}
        FROM nearest n JOIN memory_units u ON u.id = n.id
        WHERE n.r <= $4
        GROUP BY u.id
        """,
        bank_id,
        [_vector_text(e) for e in embeddings],
        min_cosine,
        limit,
    )


def _vector_text(embedding: Sequence[float]) -> str:
    """pgvector's text form; each float32 printed so that it reads back the same."""
    return "[" + ",".join(map(repr, np.asarray(embedding, dtype=np.float32).tolist())) + "]"


async def entity_neighbours(
    conn: asyncpg.Connection | asyncpg.Pool,
    bank_id: str,
    entity_ids: Sequence[UUID],
    *,
    per_entity: int = 10,
) -> list[asyncpg.Record]:
    """The most recent facts of each entity (high-fanout entities stay bounded); ``via``: the
    entities a row is among the most recent facts of."""
    if not entity_ids:
        return []
    return await conn.fetch(
        f"""
        SELECT array_agg(r.entity_id) AS via, {_POINT_COLUMNS}
        FROM (
            SELECT ue.entity_id, ue.unit_id, row_number() OVER (
                PARTITION BY ue.entity_id
                ORDER BY coalesce(m.occurred_start, m.mentioned_at) DESC NULLS LAST, ue.unit_id) AS r
            FROM unit_entities ue JOIN memory_units m ON m.id = ue.unit_id
            WHERE ue.bank_id = $1 AND ue.entity_id = ANY($2::uuid[])
        ) r JOIN memory_units u ON u.id = r.unit_id
        WHERE r.r <= $3
        GROUP BY u.id
        """,
        bank_id,
        list(entity_ids),
        per_entity,
    )
