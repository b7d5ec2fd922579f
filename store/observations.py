"""What the observation consolidator reads: an entity's facts and its observations so far."""

from __future__ import annotations

from collections.abc import Sequence
from uuid import UUID

import asyncpg

__all__ = ["entity_facts", "entity_names", "entity_observations"]


async def entity_names(pool: asyncpg.Pool, entity_ids: Sequence[UUID]) -> dict[UUID, tuple[str, str]]:
    rows = await pool.fetch(
        "SELECT id, canonical_name, kind FROM entities WHERE id = ANY($1::uuid[])", list(entity_ids)
    )
    return {r["id"]: (r["canonical_name"], r["kind"]) for r in rows}


async def entity_facts(
    pool: asyncpg.Pool, bank_id: str, entity_id: UUID, *, exclude: Sequence[UUID], limit: int
) -> list[asyncpg.Record]:
    """The entity's most recent world/experience facts (newest first)."""
    return await pool.fetch(
        """
        SELECT u.id, u.text, u.source_message_ids, coalesce(u.occurred_start, u.mentioned_at) AS when_at
        FROM unit_entities ue JOIN memory_units u ON u.id = ue.unit_id
        WHERE ue.entity_id = $2 AND u.bank_id = $1 AND u.fact_type IN ('world', 'experience')
          AND NOT (u.id = ANY($3::uuid[]))
        ORDER BY coalesce(u.occurred_start, u.mentioned_at) DESC NULLS LAST, u.created_at DESC
        LIMIT $4
        """,
        bank_id,
        entity_id,
        list(exclude),
        limit,
    )


async def entity_observations(pool: asyncpg.Pool, bank_id: str, entity_id: UUID) -> list[asyncpg.Record]:
    return await pool.fetch(
        """
        SELECT u.id, u.text, u.evidence_ids, u.embedding
        FROM unit_entities ue JOIN memory_units u ON u.id = ue.unit_id
        WHERE ue.entity_id = $2 AND u.bank_id = $1 AND u.fact_type = 'observation'
        ORDER BY u.created_at, u.id
        """,
        bank_id,
        entity_id,
    )
