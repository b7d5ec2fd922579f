"""Documents: a content hash per (bank, document) decides whether a re-upload is new work."""

from __future__ import annotations

from typing import Any

import asyncpg

__all__ = ["count_documents", "delete_document", "document_hash", "list_documents", "upsert_document"]


async def document_hash(conn: asyncpg.Connection, bank_id: str, document_id: str) -> str | None:
    return await conn.fetchval(
        "SELECT content_hash FROM documents WHERE bank_id = $1 AND id = $2 FOR UPDATE", bank_id, document_id
    )


async def upsert_document(
    conn: asyncpg.Connection, bank_id: str, document_id: str, content_hash: str, metadata: dict[str, Any]
) -> None:
    await conn.execute(
        """
        INSERT INTO documents (bank_id, id, content_hash, metadata) VALUES ($1, $2, $3, $4)
        ON CONFLICT (bank_id, id) DO UPDATE
            SET content_hash = EXCLUDED.content_hash, metadata = EXCLUDED.metadata, updated_at = now()
        """,
        bank_id,
        document_id,
        content_hash,
        metadata,
    )


async def delete_document(conn: asyncpg.Connection, bank_id: str, document_id: str, *, keep_row: bool) -> int:
    """Remove the document's facts (links and mentions cascade) and its journaled messages,
    so a replay does not bring the old version back. Returns the number of facts removed."""
    removed = await conn.execute(
        "DELETE FROM memory_units WHERE bank_id = $1 AND document_id = $2", bank_id, document_id
    )
    await conn.execute("DELETE FROM messages WHERE bank_id = $1 AND document_id = $2", bank_id, document_id)
    await conn.execute("DELETE FROM chunks WHERE bank_id = $1 AND document_id = $2", bank_id, document_id)
    if not keep_row:
        await conn.execute("DELETE FROM documents WHERE bank_id = $1 AND id = $2", bank_id, document_id)
    return int(removed.split()[-1])


async def list_documents(
    pool: asyncpg.Pool, bank_id: str, *, limit: int, offset: int
) -> list[asyncpg.Record]:
    return await pool.fetch(
        """
        SELECT d.id, d.content_hash, d.metadata, d.created_at, d.updated_at,
               (SELECT count(*) FROM memory_units u
                WHERE u.bank_id = d.bank_id AND u.document_id = d.id) AS facts
        FROM documents d WHERE d.bank_id = $1
        ORDER BY d.updated_at DESC, d.id LIMIT $2 OFFSET $3
        """,
        bank_id,
        limit,
        offset,
    )


async def count_documents(pool: asyncpg.Pool, bank_id: str) -> int:
    return await pool.fetchval("SELECT count(*) FROM documents WHERE bank_id = $1", bank_id)
