"""Corrections of facts: recorded by the API, applied by the materializer, kept in history.

A correction row holds the new version; the pipeline event that applies it carries only its
id, so a record produced to the topic by anyone else cannot change a fact. Applying one writes
the previous version to `fact_history` and the new one in place, in the materializer's
transaction; a replay re-applies the latest applied correction to the re-extracted fact.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

import asyncpg
import numpy as np

from tempr.schemas.ids import stable_id

__all__ = [
    "Correction",
    "applied_corrections_for",
    "apply_correction",
    "due_corrections",
    "fact_history",
    "mark_published",
    "record_correction",
    "to_apply",
]

_COLUMNS = (
    "id, seq, bank_id, unit_id, text, occurred_start, occurred_end, tags, reason, created_at, applied_at"
)


@dataclass(frozen=True)
class Correction:
    id: UUID
    seq: int
    bank_id: str
    unit_id: UUID
    text: str
    occurred_start: datetime | None
    occurred_end: datetime | None
    tags: list[str]
    reason: str
    conversation_id: str | None = None


def _correction(row: asyncpg.Record, conversation_id: str | None = None) -> Correction:
    return Correction(
        id=row["id"],
        seq=row["seq"],
        bank_id=row["bank_id"],
        unit_id=row["unit_id"],
        text=row["text"],
        occurred_start=row["occurred_start"],
        occurred_end=row["occurred_end"],
        tags=list(row["tags"]),
        reason=row["reason"],
        conversation_id=conversation_id,
    )


async def record_correction(
    conn: asyncpg.Connection,
    bank_id: str,
    unit_id: UUID,
    changes: dict[str, Any],
    *,
    reason: str = "",
) -> Correction | None:
    """The new version: the fact as it will be once every earlier correction is applied, with
    `changes` (text, occurred_start, occurred_end, tags) over it. None when no such fact.

    The id derives from the fact, how many corrections it had and the new values, so a retried
    request records one correction."""
    unit = await conn.fetchrow(
        """
        SELECT text, occurred_start, occurred_end, tags, conversation_id FROM memory_units
        WHERE bank_id = $1 AND id = $2 FOR UPDATE
        """,
        bank_id,
        unit_id,
    )
    if unit is None:
        return None
    latest = await conn.fetchrow(
        f"SELECT {_COLUMNS} FROM fact_corrections WHERE bank_id = $1 AND unit_id = $2 ORDER BY seq DESC LIMIT 1",
        bank_id,
        unit_id,
    )
    earlier = await conn.fetchval(
        "SELECT count(*) FROM fact_corrections WHERE bank_id = $1 AND unit_id = $2", bank_id, unit_id
    )
    base = latest if latest is not None and latest["applied_at"] is None else unit
    new = {key: changes.get(key, base[key]) for key in ("text", "occurred_start", "occurred_end", "tags")}
    correction_id = stable_id(
        bank_id,
        "correction",
        unit_id,
        earlier,
        new["text"],
        new["occurred_start"],
        new["occurred_end"],
        *sorted(new["tags"]),
    )
    await conn.execute(
        """
        INSERT INTO fact_corrections (id, bank_id, unit_id, text, occurred_start, occurred_end, tags, reason)
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (id) DO NOTHING
        """,
        correction_id,
        bank_id,
        unit_id,
        new["text"],
        new["occurred_start"],
        new["occurred_end"],
        list(new["tags"]),
        reason,
    )
    row = await conn.fetchrow(f"SELECT {_COLUMNS} FROM fact_corrections WHERE id = $1", correction_id)
    return _correction(row, unit["conversation_id"])


async def to_apply(
    conn: asyncpg.Connection | asyncpg.Pool, correction_id: UUID
) -> tuple[Correction, asyncpg.Record] | None:
    """A pending correction with the fact it corrects (None: applied, superseded or the fact is gone)."""
    row = await conn.fetchrow(
        f"SELECT {_COLUMNS} FROM fact_corrections WHERE id = $1 AND applied_at IS NULL", correction_id
    )
    if row is None:
        return None
    unit = await conn.fetchrow(
        """
        SELECT id, fact_type, mentioned_at, confidence, context, conversation_id, document_id, chunk_id,
               source_message_ids, evidence_ids, metadata
        FROM memory_units WHERE bank_id = $1 AND id = $2
        """,
        row["bank_id"],
        row["unit_id"],
    )
    if unit is None:
        return None
    return _correction(row, unit["conversation_id"]), unit


async def applied_corrections_for(
    conn: asyncpg.Connection | asyncpg.Pool, bank_id: str, unit_ids: Sequence[UUID]
) -> dict[UUID, Correction]:
    """The latest applied correction of each of these facts: a replay keeps it."""
    rows = await conn.fetch(
        f"""
        SELECT DISTINCT ON (unit_id) {_COLUMNS} FROM fact_corrections
        WHERE bank_id = $1 AND unit_id = ANY($2::uuid[]) AND applied_at IS NOT NULL
        ORDER BY unit_id, seq DESC
        """,
        bank_id,
        list(set(unit_ids)),
    )
    return {r["unit_id"]: _correction(r) for r in rows}


async def apply_correction(
    conn: asyncpg.Connection, correction_id: UUID, embedding: Sequence[float] | None
) -> bool:
    """Write the correction over its fact, the previous version into history, and drop the
    fact's old mentions and links (the caller writes the new ones). False, changing nothing,
    when it was applied already, a later one was, or the fact is gone."""
    row = await conn.fetchrow(
        f"SELECT {_COLUMNS} FROM fact_corrections WHERE id = $1 FOR UPDATE", correction_id
    )
    if row is None or row["applied_at"] is not None:
        return False
    later = await conn.fetchval(
        "SELECT EXISTS (SELECT 1 FROM fact_corrections WHERE unit_id = $1 AND seq > $2 AND applied_at IS NOT NULL)",
        row["unit_id"],
        row["seq"],
    )
    unit = await conn.fetchrow(
        "SELECT text, occurred_start, occurred_end, tags FROM memory_units WHERE bank_id = $1 AND id = $2 FOR UPDATE",
        row["bank_id"],
        row["unit_id"],
    )
    await conn.execute("UPDATE fact_corrections SET applied_at = now() WHERE id = $1", correction_id)
    if later or unit is None:
        return False
    await conn.execute(
        """
        INSERT INTO fact_history (id, bank_id, unit_id, text, occurred_start, occurred_end, tags, reason)
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (id) DO NOTHING
        """,
        correction_id,
        row["bank_id"],
        row["unit_id"],
        unit["text"],
        unit["occurred_start"],
        unit["occurred_end"],
        unit["tags"],
        row["reason"],
    )
    touched = [
        r["entity_id"]
        for r in await conn.fetch(
            "DELETE FROM unit_entities WHERE unit_id = $1 RETURNING entity_id", row["unit_id"]
        )
    ]
    await conn.execute("DELETE FROM memory_links WHERE from_id = $1 OR to_id = $1", row["unit_id"])
    await conn.execute(
        """
        UPDATE memory_units SET text = $2, embedding = coalesce($3, embedding), occurred_start = $4,
            occurred_end = $5, tags = $6, metadata = metadata || jsonb_build_object('corrected_by', $7::text),
            updated_at = now()
        WHERE id = $1
        """,
        row["unit_id"],
        row["text"],
        None if embedding is None else np.asarray(embedding, dtype=np.float32),
        row["occurred_start"],
        row["occurred_end"],
        row["tags"],
        str(correction_id),
    )
    await conn.execute(
        """
        UPDATE entities e SET mention_count = (SELECT count(*) FROM unit_entities ue WHERE ue.entity_id = e.id)
        WHERE e.id = ANY($1::uuid[])
        """,
        touched,
    )
    return True


async def due_corrections(pool: asyncpg.Pool, *, older_than_s: float, limit: int = 1000) -> list[Correction]:
    """Pending corrections whose event was not sent, or sent long ago (lost): to publish again."""
    rows = await pool.fetch(
        f"""
        SELECT {_COLUMNS},
               (SELECT u.conversation_id FROM memory_units u WHERE u.id = c.unit_id) AS conversation_id
        FROM fact_corrections c
        WHERE applied_at IS NULL AND coalesce(published_at, created_at) <= now() - make_interval(secs => $1)
        ORDER BY seq LIMIT $2
        """,
        older_than_s,
        limit,
    )
    return [_correction(r, r["conversation_id"]) for r in rows]


async def mark_published(pool: asyncpg.Pool | asyncpg.Connection, ids: Sequence[UUID]) -> None:
    await pool.execute(
        "UPDATE fact_corrections SET published_at = now() WHERE id = ANY($1::uuid[])", list(ids)
    )


async def fact_history(
    conn: asyncpg.Connection | asyncpg.Pool, bank_id: str, unit_id: UUID
) -> list[asyncpg.Record]:
    """Earlier versions, oldest first."""
    return await conn.fetch(
        """
        SELECT h.text, h.occurred_start, h.occurred_end, h.tags, h.replaced_at, h.reason
        FROM fact_history h LEFT JOIN fact_corrections c ON c.id = h.id
        -- Corrections applied in one transaction share a time: their own order decides.
        WHERE h.bank_id = $1 AND h.unit_id = $2 ORDER BY c.seq NULLS FIRST, h.replaced_at, h.id
        """,
        bank_id,
        unit_id,
    )
