"""Reading a bank out for export: every table's rows through server-side cursors.

The caller holds one REPEATABLE READ transaction, so the stream is one consistent snapshot,
and the cursors fetch a few hundred rows at a time, so a bank of any size streams in bounded
memory. Kinds come parents first: tombstones (so an importer refuses what they name before
it arrives), messages, documents, chunks, entities, facts, then what refers to facts.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import asyncpg

__all__ = ["EXPORT_KINDS", "bank_profile", "export_rows"]

_PREFETCH = 500

# (record kind, query of one bank's rows by $1). Fixed text, never built from input.
EXPORT_KINDS: tuple[tuple[str, str], ...] = (
    (
        "forgotten_message",
        "SELECT message_id, conversation_id, forgotten_at, reason FROM forgotten_messages"
        " WHERE bank_id = $1 ORDER BY message_id",
    ),
    (
        "forgotten_fact",
        "SELECT unit_id, forgotten_at, reason FROM forgotten_facts WHERE bank_id = $1 ORDER BY unit_id",
    ),
    (
        "message",
        "SELECT id, message_id, conversation_id, document_id, payload, received_at, processed_at"
        " FROM messages WHERE bank_id = $1 ORDER BY seq",
    ),
    (
        "document",
        "SELECT id, content_hash, metadata, created_at, updated_at FROM documents WHERE bank_id = $1 ORDER BY id",
    ),
    (
        "chunk",
        "SELECT id, conversation_id, document_id, text, message_ids, created_at FROM chunks"
        " WHERE bank_id = $1 ORDER BY created_at, id",
    ),
    (
        "entity",
        "SELECT id, canonical_name, kind, aliases, mention_count, first_seen, last_seen FROM entities"
        " WHERE bank_id = $1 ORDER BY id",
    ),
    (
        "fact",
        "SELECT id, text, embedding::real[] AS embedding, fact_type, occurred_start, occurred_end, mentioned_at,"
        " confidence, tags, metadata, context, conversation_id, document_id, chunk_id, source_message_ids,"
        " evidence_ids, created_at, updated_at FROM memory_units WHERE bank_id = $1"
        # Evidence first: an opinion or observation after the facts it rests on.
        " ORDER BY fact_type IN ('opinion', 'observation'), created_at, id",
    ),
    (
        "unit_entity",
        "SELECT unit_id, entity_id FROM unit_entities WHERE bank_id = $1 ORDER BY unit_id, entity_id",
    ),
    (
        "link",
        "SELECT from_id, to_id, link_type, weight FROM memory_links WHERE bank_id = $1"
        " ORDER BY from_id, to_id, link_type",
    ),
    (
        "opinion_history",
        "SELECT id, opinion_id, verdict, previous_text, previous_confidence, new_text, new_confidence,"
        " evidence_ids, reasoning, created_at FROM opinion_history WHERE bank_id = $1 ORDER BY created_at, id",
    ),
    (
        "correction",
        "SELECT id, unit_id, text, occurred_start, occurred_end, tags, reason, created_at, applied_at"
        " FROM fact_corrections WHERE bank_id = $1 ORDER BY seq",
    ),
    (
        "fact_history",
        "SELECT id, unit_id, text, occurred_start, occurred_end, tags, replaced_at, reason FROM fact_history"
        " WHERE bank_id = $1 ORDER BY replaced_at, id",
    ),
)


async def bank_profile(conn: asyncpg.Connection, bank_id: str) -> asyncpg.Record | None:
    return await conn.fetchrow(
        "SELECT name, background, disposition, config, created_at, updated_at, id_lineage FROM banks WHERE id = $1",
        bank_id,
    )


async def export_rows(conn: asyncpg.Connection, bank_id: str) -> AsyncIterator[tuple[str, dict[str, Any]]]:
    """(kind, row) for every row of the bank, kind by kind; call inside a transaction."""
    for kind, query in EXPORT_KINDS:
        async for row in conn.cursor(query, bank_id, prefetch=_PREFETCH):
            yield kind, dict(row)
