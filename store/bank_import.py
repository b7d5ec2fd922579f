"""Writing an imported bank: one set-based statement per batch of one kind of record.

Every write is `ON CONFLICT DO NOTHING` on the rows' own ids, so importing twice changes
nothing and an import cut halfway completes when run again. Tombstones of the target bank
win: a forgotten message, its chunks and the facts citing it, and a forgotten fact, are never
written (whether the tombstone came with the import or was there before).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import asyncpg

__all__ = ["IMPORT_KINDS", "create_bank_if_missing", "write_batch"]

# kind → statement over $1 (target bank) and $2 (a JSON array of the records, remapped).
IMPORT_KINDS: dict[str, str] = {
    "forgotten_message": """
        INSERT INTO forgotten_messages (bank_id, message_id, conversation_id, forgotten_at, reason)
        SELECT $1, r.message_id, r.conversation_id, r.forgotten_at, r.reason
        FROM jsonb_to_recordset($2::jsonb)
             AS r(message_id text, conversation_id text, forgotten_at timestamptz, reason text)
        ON CONFLICT DO NOTHING
    """,
    "forgotten_fact": """
        INSERT INTO forgotten_facts (bank_id, unit_id, forgotten_at, reason)
        SELECT $1, r.unit_id, r.forgotten_at, r.reason
        FROM jsonb_to_recordset($2::jsonb) AS r(unit_id uuid, forgotten_at timestamptz, reason text)
        ON CONFLICT DO NOTHING
    """,
    # Materialized messages stay materialized; pending ones are left for the sweeper to publish.
    # In the export's order, so the journal keeps its order (a replay reads turns by it).
    "message": """
        INSERT INTO messages (id, bank_id, message_id, conversation_id, document_id, payload, received_at,
                              published_at, processed_at)
        SELECT r.id, $1, r.message_id, r.conversation_id, r.document_id, r.payload, r.received_at,
               r.processed_at, r.processed_at
        FROM ROWS FROM (jsonb_to_recordset($2::jsonb) AS (id uuid, message_id text, conversation_id text,
             document_id text, payload jsonb, received_at timestamptz, processed_at timestamptz))
             WITH ORDINALITY AS r(id, message_id, conversation_id, document_id, payload, received_at,
             processed_at, n)
        WHERE NOT EXISTS (SELECT 1 FROM forgotten_messages f WHERE f.bank_id = $1 AND f.message_id = r.message_id)
        ORDER BY r.n
        ON CONFLICT DO NOTHING
    """,
    "document": """
        INSERT INTO documents (bank_id, id, content_hash, metadata, created_at, updated_at)
        SELECT $1, r.id, r.content_hash, r.metadata, r.created_at, r.updated_at
        FROM jsonb_to_recordset($2::jsonb)
             AS r(id text, content_hash text, metadata jsonb, created_at timestamptz, updated_at timestamptz)
        ON CONFLICT DO NOTHING
    """,
    "chunk": """
        INSERT INTO chunks (id, bank_id, conversation_id, document_id, text, message_ids, created_at)
        SELECT r.id, $1, r.conversation_id, r.document_id, r.text, r.message_ids, r.created_at
        FROM jsonb_to_recordset($2::jsonb) AS r(id uuid, conversation_id text, document_id text, text text,
             message_ids text[], created_at timestamptz)
        WHERE NOT EXISTS (SELECT 1 FROM forgotten_messages f
                          WHERE f.bank_id = $1 AND f.message_id = ANY(r.message_ids))
        ON CONFLICT DO NOTHING
    """,
    "entity": """
        INSERT INTO entities (id, bank_id, canonical_name, kind, aliases, mention_count, first_seen, last_seen)
        SELECT r.id, $1, r.canonical_name, r.kind, r.aliases, r.mention_count, r.first_seen, r.last_seen
        FROM jsonb_to_recordset($2::jsonb) AS r(id uuid, canonical_name text, kind text, aliases text[],
             mention_count integer, first_seen timestamptz, last_seen timestamptz)
        ON CONFLICT DO NOTHING
    """,
    "fact": """
        INSERT INTO memory_units (id, bank_id, text, embedding, fact_type, occurred_start, occurred_end,
            mentioned_at, confidence, tags, metadata, context, conversation_id, document_id, chunk_id,
            source_message_ids, evidence_ids, created_at, updated_at)
        SELECT r.id, $1, r.text, r.embedding::vector, r.fact_type, r.occurred_start, r.occurred_end,
               r.mentioned_at, r.confidence, r.tags, r.metadata, r.context, r.conversation_id, r.document_id,
               r.chunk_id, r.source_message_ids, r.evidence_ids, r.created_at, r.updated_at
        FROM jsonb_to_recordset($2::jsonb) AS r(id uuid, text text, embedding real[], fact_type text,
             occurred_start timestamptz, occurred_end timestamptz, mentioned_at timestamptz, confidence real,
             tags text[], metadata jsonb, context text, conversation_id text, document_id text, chunk_id uuid,
             source_message_ids text[], evidence_ids uuid[], created_at timestamptz, updated_at timestamptz)
        WHERE NOT EXISTS (SELECT 1 FROM forgotten_facts f WHERE f.bank_id = $1 AND f.unit_id = r.id)
          AND NOT EXISTS (SELECT 1 FROM forgotten_messages f
                          WHERE f.bank_id = $1 AND f.message_id = ANY(r.source_message_ids)
                            AND r.fact_type IN ('world', 'experience'))
        ON CONFLICT DO NOTHING
    """,
    "unit_entity": """
        INSERT INTO unit_entities (unit_id, entity_id, bank_id)
        SELECT r.unit_id, r.entity_id, $1
        FROM jsonb_to_recordset($2::jsonb) AS r(unit_id uuid, entity_id uuid)
        WHERE EXISTS (SELECT 1 FROM memory_units u WHERE u.id = r.unit_id AND u.bank_id = $1)
          AND EXISTS (SELECT 1 FROM entities e WHERE e.id = r.entity_id AND e.bank_id = $1)
        ON CONFLICT DO NOTHING
    """,
    "link": """
        INSERT INTO memory_links (from_id, to_id, link_type, weight, bank_id)
        SELECT r.from_id, r.to_id, r.link_type, r.weight, $1
        FROM jsonb_to_recordset($2::jsonb) AS r(from_id uuid, to_id uuid, link_type text, weight real)
        WHERE EXISTS (SELECT 1 FROM memory_units u WHERE u.id = r.from_id AND u.bank_id = $1)
          AND EXISTS (SELECT 1 FROM memory_units u WHERE u.id = r.to_id AND u.bank_id = $1)
        ON CONFLICT DO NOTHING
    """,
    "opinion_history": """
        INSERT INTO opinion_history (id, bank_id, opinion_id, verdict, previous_text, previous_confidence,
                                     new_text, new_confidence, evidence_ids, reasoning, created_at)
        SELECT r.id, $1, r.opinion_id, r.verdict, r.previous_text, r.previous_confidence, r.new_text,
               r.new_confidence, r.evidence_ids, r.reasoning, r.created_at
        FROM jsonb_to_recordset($2::jsonb) AS r(id uuid, opinion_id uuid, verdict text, previous_text text,
             previous_confidence real, new_text text, new_confidence real, evidence_ids uuid[], reasoning text,
             created_at timestamptz)
        WHERE EXISTS (SELECT 1 FROM memory_units u WHERE u.id = r.opinion_id AND u.bank_id = $1)
        ON CONFLICT DO NOTHING
    """,
    "correction": """
        INSERT INTO fact_corrections (id, bank_id, unit_id, text, occurred_start, occurred_end, tags, reason,
                                      created_at, published_at, applied_at)
        SELECT r.id, $1, r.unit_id, r.text, r.occurred_start, r.occurred_end, r.tags, r.reason, r.created_at,
               r.applied_at, r.applied_at
        FROM jsonb_to_recordset($2::jsonb) AS r(id uuid, unit_id uuid, text text, occurred_start timestamptz,
             occurred_end timestamptz, tags text[], reason text, created_at timestamptz, applied_at timestamptz)
        ON CONFLICT DO NOTHING
    """,
    "fact_history": """
        INSERT INTO fact_history (id, bank_id, unit_id, text, occurred_start, occurred_end, tags, replaced_at,
                                  reason)
        SELECT r.id, $1, r.unit_id, r.text, r.occurred_start, r.occurred_end, r.tags, r.replaced_at, r.reason
        FROM jsonb_to_recordset($2::jsonb) AS r(id uuid, unit_id uuid, text text, occurred_start timestamptz,
             occurred_end timestamptz, tags text[], replaced_at timestamptz, reason text)
        ON CONFLICT DO NOTHING
    """,
}


async def create_bank_if_missing(conn: asyncpg.Connection, bank_id: str, profile: dict[str, Any]) -> bool:
    """The exported profile for a bank that does not exist yet; an existing profile is kept.

    The id lineage is taken by a new bank, or by an existing one that holds nothing yet (made
    empty before the import); a bank with messages or facts of its own keeps its own ids."""
    status = await conn.execute(
        """
        INSERT INTO banks (id, name, background, disposition, config, created_at, updated_at, id_lineage)
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (id) DO NOTHING
        """,
        bank_id,
        profile["name"],
        profile["background"],
        profile["disposition"],
        profile["config"],
        profile["created_at"],
        profile["updated_at"],
        profile["id_lineage"],
    )
    if status.endswith(" 1"):
        return True
    await conn.execute(
        """
        UPDATE banks SET id_lineage = $2 WHERE id = $1 AND id_lineage = '{}'
          AND NOT EXISTS (SELECT 1 FROM messages WHERE bank_id = $1)
          AND NOT EXISTS (SELECT 1 FROM memory_units WHERE bank_id = $1)
        """,
        bank_id,
        profile["id_lineage"],
    )
    return False


async def write_batch(
    conn: asyncpg.Connection, bank_id: str, kind: str, rows: Sequence[dict[str, Any]]
) -> int:
    """Rows written anew (what was there already, or is tombstoned, is not)."""
    # The pool's jsonb codec encodes the list.
    status = await conn.execute(IMPORT_KINDS[kind], bank_id, list(rows))
    return int(status.split()[-1])
