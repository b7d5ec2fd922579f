"""A neighbourhood of the fact graph around a few facts: for the console's graph and a
fact's links. Bounded per link type, so a bank of any size answers with a small picture."""

from __future__ import annotations

from collections.abc import Sequence
from uuid import UUID

import asyncpg

__all__ = ["entity_fact_ids", "neighbourhood"]


async def neighbourhood(
    pool: asyncpg.Pool, bank_id: str, centres: Sequence[UUID], *, per_type: int
) -> list[asyncpg.Record]:
    """Links touching any centre: ``(from_id, to_id, link_type, weight)``, the ``per_type``
    heaviest of each type per centre."""
    return await pool.fetch(
        """
        SELECT from_id, to_id, link_type, weight FROM (
            SELECT l.from_id, l.to_id, l.link_type, l.weight::float8 AS weight,
                   row_number() OVER (PARTITION BY c.id, l.link_type
                                      ORDER BY l.weight DESC, l.from_id, l.to_id) AS rank
            FROM unnest($2::uuid[]) AS c(id)
            JOIN memory_links l ON (l.from_id = c.id OR l.to_id = c.id)
            WHERE l.bank_id = $1
        ) ranked
        WHERE rank <= $3
        """,
        bank_id,
        list(centres),
        per_type,
    )


async def entity_fact_ids(pool: asyncpg.Pool, bank_id: str, entity_id: UUID, *, limit: int) -> list[UUID]:
    """The entity's most recent facts, for the centre of its neighbourhood."""
    rows = await pool.fetch(
        """
        SELECT u.id FROM unit_entities ue JOIN memory_units u ON u.id = ue.unit_id
        WHERE ue.entity_id = $2 AND u.bank_id = $1
        ORDER BY coalesce(u.occurred_start, u.mentioned_at) DESC NULLS LAST, u.id LIMIT $3
        """,
        bank_id,
        entity_id,
        limit,
    )
    return [r["id"] for r in rows]
