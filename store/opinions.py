"""Opinions (memory units of type `opinion`), their updates and their history."""

from __future__ import annotations

from collections.abc import Sequence
from uuid import UUID

import asyncpg
import numpy as np

from tempr.schemas.events import OpinionUpdate

__all__ = [
    "applied_updates",
    "apply_opinion_update",
    "count_opinions",
    "get_opinion",
    "list_opinions",
    "opinion_history",
    "opinions_about",
]

_OPINION = """
    u.id, u.bank_id, u.text, u.confidence, u.evidence_ids, u.source_message_ids, u.created_at,
    u.updated_at,
    coalesce((SELECT array_agg(e.canonical_name ORDER BY e.canonical_name)
              FROM unit_entities ue JOIN entities e ON e.id = ue.entity_id
              WHERE ue.unit_id = u.id), '{}') AS entities
"""


async def list_opinions(pool: asyncpg.Pool, bank_id: str, *, limit: int, offset: int) -> list[asyncpg.Record]:
    return await pool.fetch(
        f"""
        SELECT {_OPINION} FROM memory_units u
        WHERE u.bank_id = $1 AND u.fact_type = 'opinion'
        ORDER BY u.created_at, u.id LIMIT $2 OFFSET $3
        """,
        bank_id,
        limit,
        offset,
    )


async def count_opinions(pool: asyncpg.Pool, bank_id: str) -> int:
    return await pool.fetchval(
        "SELECT count(*) FROM memory_units WHERE bank_id = $1 AND fact_type = 'opinion'", bank_id
    )


async def get_opinion(pool: asyncpg.Pool, bank_id: str, opinion_id: UUID) -> asyncpg.Record | None:
    return await pool.fetchrow(
        f"SELECT {_OPINION} FROM memory_units u WHERE u.bank_id = $1 AND u.id = $2 AND u.fact_type = 'opinion'",
        bank_id,
        opinion_id,
    )


async def opinion_history(pool: asyncpg.Pool, opinion_id: UUID) -> list[asyncpg.Record]:
    return await pool.fetch(
        """
        SELECT id, verdict, previous_text, previous_confidence, new_text, new_confidence,
               evidence_ids, reasoning, created_at
        FROM opinion_history WHERE opinion_id = $1 ORDER BY created_at, id
        """,
        opinion_id,
    )


async def opinions_about(
    pool: asyncpg.Pool, bank_id: str, entity_ids: Sequence[UUID], *, limit: int
) -> list[asyncpg.Record]:
    """The bank's opinions linked to any of these entities, most entities shared first."""
    return await pool.fetch(
        f"""
        SELECT {_OPINION}, array_agg(ue.entity_id) AS shared_entity_ids
        FROM memory_units u JOIN unit_entities ue ON ue.unit_id = u.id
        WHERE u.bank_id = $1 AND u.fact_type = 'opinion' AND ue.entity_id = ANY($2::uuid[])
        GROUP BY u.id
        ORDER BY count(*) DESC, u.updated_at DESC
        LIMIT $3
        """,
        bank_id,
        list(entity_ids),
        limit,
    )


async def applied_updates(pool: asyncpg.Pool, update_ids: Sequence[UUID]) -> set[UUID]:
    rows = await pool.fetch("SELECT id FROM opinion_history WHERE id = ANY($1::uuid[])", list(update_ids))
    return {r["id"] for r in rows}


async def apply_opinion_update(conn: asyncpg.Connection, update: OpinionUpdate) -> bool:
    """Apply once: the history row is the idempotency record. Returns False when the update
    was applied before or its opinion no longer exists. Call inside a transaction."""
    current = await conn.fetchrow(
        """
        SELECT text, confidence FROM memory_units
        WHERE id = $1 AND bank_id = $2 AND fact_type = 'opinion' FOR UPDATE
        """,
        update.opinion_id,
        update.bank_id,
    )
    if current is None:
        return False
    old_confidence = current["confidence"] if current["confidence"] is not None else 0.5
    if update.verdict == "contradict":
        new_text = update.revised_text or current["text"]
        new_confidence = (
            update.revised_confidence
            if update.revised_confidence is not None
            else old_confidence + update.confidence_delta
        )
    else:
        new_text = current["text"]
        new_confidence = old_confidence + update.confidence_delta
    new_confidence = min(1.0, max(0.0, new_confidence))
    inserted = await conn.fetchval(
        """
        INSERT INTO opinion_history (id, bank_id, opinion_id, verdict, previous_text, previous_confidence,
                                     new_text, new_confidence, evidence_ids, reasoning)
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
        ON CONFLICT (id) DO NOTHING
        RETURNING true
        """,
        update.update_id,
        update.bank_id,
        update.opinion_id,
        update.verdict,
        current["text"],
        current["confidence"],
        new_text,
        new_confidence,
        update.evidence_ids,
        update.reasoning,
    )
    if not inserted:
        return False
    embedding = (
        None
        if update.revised_embedding is None or new_text == current["text"]
        else np.asarray(update.revised_embedding, dtype=np.float32)
    )
    await conn.execute(
        """
        UPDATE memory_units SET
            text = $2,
            confidence = $3,
            embedding = coalesce($4, embedding),
            evidence_ids = ARRAY(SELECT DISTINCT unnest(evidence_ids || $5::uuid[])),
            source_message_ids = ARRAY(SELECT DISTINCT unnest(source_message_ids || $6::text[])),
            updated_at = now()
        WHERE id = $1
        """,
        update.opinion_id,
        new_text,
        new_confidence,
        embedding,
        update.evidence_ids,
        update.evidence_message_ids,
    )
    return True
