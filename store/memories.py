"""Memory units and their chunks: idempotent writes and paged reads."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import NamedTuple
from uuid import UUID

import asyncpg
import numpy as np

from tempr.schemas.events import ExtractedFact
from tempr.store.vector_params import vector_params

__all__ = [
    "UNIT_COLUMNS",
    "Candidate",
    "count_units",
    "get_unit",
    "list_units",
    "merge_provenance",
    "near_duplicate_candidates",
    "near_duplicate_candidates_of_new",
    "stored_ids",
    "unit_entities",
    "unit_links",
    "upsert_chunk",
    "upsert_fact",
]

UNIT_COLUMNS = """
    id, bank_id, text, fact_type, occurred_start, occurred_end, mentioned_at, confidence,
    proof_count, tags, metadata, context, conversation_id, document_id, chunk_id,
    source_message_ids, evidence_ids, created_at, updated_at
"""


async def upsert_chunk(
    conn: asyncpg.Connection,
    *,
    chunk_id: UUID,
    bank_id: str,
    conversation_id: str | None,
    document_id: str | None,
    text: str,
    message_ids: Sequence[str],
) -> None:
    await conn.execute(
        """
        INSERT INTO chunks (id, bank_id, conversation_id, document_id, text, message_ids)
        VALUES ($1, $2, $3, $4, $5, $6)
        ON CONFLICT (id) DO UPDATE SET text = EXCLUDED.text, message_ids = EXCLUDED.message_ids
        """,
        chunk_id,
        bank_id,
        conversation_id,
        document_id,
        text,
        list(message_ids),
    )


async def near_duplicate_candidates(
    conn: asyncpg.Connection,
    bank_id: str,
    fact: ExtractedFact,
    *,
    min_cosine: float,
    window: timedelta = timedelta(hours=24),
    limit: int = 5,
) -> list[asyncpg.Record]:
    """Other facts of the bank, close in time, whose embeddings are nearly the same (id, text),
    nearest first. Candidates only: whether one says the same thing is for the texts to tell."""
    if fact.embedding is None:
        return []
    when = fact.occurred_start or fact.mentioned_at
    return await conn.fetch(
        """
        SELECT id, text FROM memory_units
        WHERE bank_id = $1 AND id <> $2 AND fact_type = $3
          AND ($5::timestamptz IS NULL
               OR coalesce(occurred_start, mentioned_at) BETWEEN $5 - $6::interval AND $5 + $6::interval)
          AND 1 - (embedding <=> $4) >= $7
        ORDER BY embedding <=> $4
        LIMIT $8
        """,
        bank_id,
        fact.fact_id,
        fact.fact_type,
        np.asarray(fact.embedding, dtype=np.float32),
        when,
        window,
        min_cosine,
        limit,
    )


class Candidate(NamedTuple):
    """A near-duplicate candidate: a stored fact (id, text) or an earlier fact of the batch."""

    distance: float
    id: UUID | None
    text: str | None
    earlier: int | None


async def near_duplicate_candidates_of_new(
    conn: asyncpg.Connection,
    bank_id: str,
    facts: Sequence[ExtractedFact],
    *,
    min_cosine: float,
    window: timedelta = timedelta(hours=24),
    limit: int = 5,
) -> list[list[Candidate]]:
    """`near_duplicate_candidates` of every fact of `facts` (none stored yet) in one statement,
    for facts stored in their order: each fact's candidates are the stored facts the single
    query finds (by id) and the facts before it in `facts` that pass the same filters (by
    position), with their cosine distances, nearest first. The caller drops the earlier
    facts it did not store and keeps the nearest `limit`."""
    rows = [(i, f) for i, f in enumerate(facts) if f.embedding is not None]
    if not rows:
        return [[] for _ in facts]
    found = await conn.fetch(
        """
        WITH q AS (
            SELECT i, id, fact_type, when_at, embedding
            FROM unnest($2::int[], $3::uuid[], $4::text[], $5::timestamptz[], $6::vector[])
                 AS q(i, id, fact_type, when_at, embedding)
        )
        SELECT q.i, c.distance, c.id, c.text, NULL::int AS earlier
        FROM q CROSS JOIN LATERAL (
            SELECT id, text, embedding <=> q.embedding AS distance FROM memory_units
            WHERE bank_id = $1 AND id <> q.id AND fact_type = q.fact_type
              AND (q.when_at IS NULL
                   OR coalesce(occurred_start, mentioned_at) BETWEEN q.when_at - $7::interval
                                                                 AND q.when_at + $7::interval)
              AND 1 - (embedding <=> q.embedding) >= $8
            ORDER BY embedding <=> q.embedding
            LIMIT $9
        ) c
        UNION ALL
        SELECT q.i, p.embedding <=> q.embedding, NULL, NULL, p.i
        FROM q JOIN q p ON p.i < q.i AND p.id <> q.id AND p.fact_type = q.fact_type
        WHERE (q.when_at IS NULL
               OR p.when_at BETWEEN q.when_at - $7::interval AND q.when_at + $7::interval)
          AND 1 - (p.embedding <=> q.embedding) >= $8
        """,
        bank_id,
        [i for i, _ in rows],
        [f.fact_id for _, f in rows],
        [f.fact_type for _, f in rows],
        [f.occurred_start or f.mentioned_at for _, f in rows],
        vector_params([f.embedding for _, f in rows if f.embedding is not None]),
        window,
        min_cosine,
        limit,
    )
    out: list[list[Candidate]] = [[] for _ in facts]
    for r in found:
        out[r["i"]].append(Candidate(r["distance"], r["id"], r["text"], r["earlier"]))
    for candidates in out:
        candidates.sort(key=lambda c: c.distance)
    return out


async def stored_ids(conn: asyncpg.Connection, ids: Sequence[UUID]) -> set[UUID]:
    """Which of `ids` are stored already (one lookup for a chunk's facts)."""
    rows = await conn.fetch("SELECT id FROM memory_units WHERE id = ANY($1::uuid[])", list(ids))
    return {r["id"] for r in rows}


# The stored version is a correction the incoming extraction does not carry (an original
# redelivered, or a re-extraction that took an older correction): the stored one wins.
_KEPT = (
    "(memory_units.metadata ? 'corrected_by'"
    " AND memory_units.metadata->>'corrected_by' IS DISTINCT FROM EXCLUDED.metadata->>'corrected_by')"
)


async def upsert_fact(
    conn: asyncpg.Connection, bank_id: str, chunk_id: UUID | None, fact: ExtractedFact
) -> None:
    """Insert or refresh. An opinion's text and confidence belong to its updates once stored
    (a redelivered formation must not undo them); an observation's evidence only grows; a
    corrected fact keeps its correction against a redelivered or older-corrected extraction."""
    await conn.execute(
        f"""
        INSERT INTO memory_units (
            id, bank_id, text, embedding, fact_type, occurred_start, occurred_end, mentioned_at,
            confidence, tags, metadata, context, conversation_id, document_id, chunk_id,
            source_message_ids, evidence_ids)
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)
        ON CONFLICT (id) DO UPDATE SET
            text = CASE WHEN memory_units.fact_type = 'opinion' OR {_KEPT} THEN memory_units.text
                        ELSE EXCLUDED.text END,
            embedding = CASE WHEN memory_units.fact_type = 'opinion' OR {_KEPT} THEN memory_units.embedding
                             ELSE EXCLUDED.embedding END,
            fact_type = EXCLUDED.fact_type,
            occurred_start = CASE WHEN {_KEPT} THEN memory_units.occurred_start ELSE EXCLUDED.occurred_start END,
            occurred_end = CASE WHEN {_KEPT} THEN memory_units.occurred_end ELSE EXCLUDED.occurred_end END,
            mentioned_at = EXCLUDED.mentioned_at,
            confidence = CASE WHEN memory_units.fact_type = 'opinion' THEN memory_units.confidence
                              ELSE EXCLUDED.confidence END,
            tags = CASE WHEN {_KEPT} THEN memory_units.tags ELSE EXCLUDED.tags END,
            metadata = CASE WHEN {_KEPT} THEN EXCLUDED.metadata || memory_units.metadata
                            ELSE memory_units.metadata || EXCLUDED.metadata END,
            context = EXCLUDED.context,
            chunk_id = EXCLUDED.chunk_id,
            source_message_ids = ARRAY(SELECT DISTINCT unnest(
                memory_units.source_message_ids || EXCLUDED.source_message_ids)),
            evidence_ids = ARRAY(SELECT DISTINCT unnest(memory_units.evidence_ids || EXCLUDED.evidence_ids)),
            updated_at = now()
        """,
        fact.fact_id,
        bank_id,
        fact.text,
        None if fact.embedding is None else np.asarray(fact.embedding, dtype=np.float32),
        fact.fact_type,
        fact.occurred_start,
        fact.occurred_end,
        fact.mentioned_at,
        fact.confidence,
        fact.tags,
        fact.metadata,
        fact.context,
        fact.conversation_id,
        fact.document_id,
        chunk_id,
        fact.source_message_ids,
        fact.evidence_ids,
    )


async def merge_provenance(
    conn: asyncpg.Connection,
    unit_id: UUID,
    source_message_ids: Sequence[str],
    evidence_ids: Sequence[UUID] = (),
    *,
    merged_id: UUID | None = None,
) -> None:
    """A near-duplicate keeps one row; the existing fact gains the new sources (and evidence)
    and names the folded fact's id in `metadata.merged_ids`: forgetting the fact tombstones
    that id too, so the folded statement never comes back on its own."""
    await conn.execute(
        """
        UPDATE memory_units SET
            source_message_ids = ARRAY(SELECT DISTINCT unnest(source_message_ids || $2::text[])),
            evidence_ids = ARRAY(SELECT DISTINCT unnest(evidence_ids || $3::uuid[])),
            metadata = CASE
                WHEN $4::text IS NULL OR coalesce(metadata->'merged_ids', '[]') ? $4::text THEN metadata
                ELSE jsonb_set(metadata, '{merged_ids}', coalesce(metadata->'merged_ids', '[]') || to_jsonb($4::text))
            END,
            updated_at = now()
        WHERE id = $1
        """,
        unit_id,
        list(source_message_ids),
        list(evidence_ids),
        None if merged_id is None else str(merged_id),
    )


async def list_units(
    pool: asyncpg.Pool, bank_id: str, *, limit: int, offset: int, fact_type: str | None = None
) -> list[asyncpg.Record]:
    return await pool.fetch(
        f"""
        SELECT {UNIT_COLUMNS} FROM memory_units
        WHERE bank_id = $1 AND ($4::text IS NULL OR fact_type = $4)
        ORDER BY created_at, id
        LIMIT $2 OFFSET $3
        """,
        bank_id,
        limit,
        offset,
        fact_type,
    )


async def count_units(pool: asyncpg.Pool, bank_id: str) -> int:
    return await pool.fetchval("SELECT count(*) FROM memory_units WHERE bank_id = $1", bank_id)


async def get_unit(
    conn: asyncpg.Connection | asyncpg.Pool, bank_id: str, unit_id: UUID
) -> asyncpg.Record | None:
    """One fact with its chunk's text (its provenance)."""
    return await conn.fetchrow(
        f"""
        SELECT {UNIT_COLUMNS}, (SELECT c.text FROM chunks c WHERE c.id = u.chunk_id) AS chunk_text
        FROM memory_units u WHERE bank_id = $1 AND id = $2
        """,
        bank_id,
        unit_id,
    )


async def unit_entities(conn: asyncpg.Connection | asyncpg.Pool, unit_id: UUID) -> list[asyncpg.Record]:
    return await conn.fetch(
        """
        SELECT e.id, e.canonical_name, e.kind, e.aliases, e.mention_count, e.first_seen, e.last_seen
        FROM unit_entities ue JOIN entities e ON e.id = ue.entity_id
        WHERE ue.unit_id = $1 ORDER BY e.canonical_name, e.id
        """,
        unit_id,
    )


async def unit_links(
    conn: asyncpg.Connection | asyncpg.Pool, unit_id: UUID, *, limit: int = 200
) -> list[asyncpg.Record]:
    """Links in both directions, heaviest first."""
    return await conn.fetch(
        """
        SELECT to_id AS other_id, link_type, weight, 'out' AS direction FROM memory_links WHERE from_id = $1
        UNION ALL
        SELECT from_id, link_type, weight, 'in' FROM memory_links WHERE to_id = $1
        ORDER BY weight DESC, other_id
        LIMIT $2
        """,
        unit_id,
        limit,
    )
