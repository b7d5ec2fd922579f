"""The embedding column follows the model: its dimension read, checked at start-up, re-sized
on purpose (`tempr migrate --embedding-model NAME`).

Migration 0001 creates `memory_units.embedding vector(384)` (the packaged MiniLM); a model of
another size re-sizes it here, with every index on the column dropped and re-created from its
own definition (so per-bank partial indexes survive too).
"""

from __future__ import annotations

from collections.abc import Sequence
from uuid import UUID

import asyncpg
import numpy as np

from tempr.errors import TemprError

__all__ = [
    "EmbeddingDimensionMismatch",
    "check_embedding_dimension",
    "embedding_dimension",
    "resize_embedding_column",
    "set_embeddings",
    "units_after",
]


class EmbeddingDimensionMismatch(TemprError):
    """The configured embedding model's vectors do not fit the database column."""


async def embedding_dimension(conn: asyncpg.Connection | asyncpg.Pool) -> int | None:
    """`memory_units.embedding`'s declared dimension (pgvector keeps it as the type modifier)."""
    typmod: int | None = await conn.fetchval(
        """
        SELECT atttypmod FROM pg_attribute
         WHERE attrelid = 'memory_units'::regclass AND attname = 'embedding' AND NOT attisdropped
        """
    )
    return typmod if typmod is not None and typmod > 0 else None


async def check_embedding_dimension(
    conn: asyncpg.Connection | asyncpg.Pool, model: str, dimension: int
) -> None:
    column = await embedding_dimension(conn)
    if column is not None and column != dimension:
        raise EmbeddingDimensionMismatch(
            f"the embedding model {model!r} makes {dimension}-dimensional vectors, but the database "
            f"stores vector({column}) (memory_units.embedding). To switch models run "
            f"`tempr migrate --embedding-model {model}` with the same settings: it re-sizes the column "
            f"and its indexes, then replays every bank; or set TEMPR_EMBEDDING_MODEL back to the "
            f"{column}-dimensional model the data was embedded with."
        )


async def resize_embedding_column(conn: asyncpg.Connection, dimension: int) -> bool:
    """Re-size the column to `dimension` (emptying it: old vectors cannot be converted) and
    re-create its indexes; run it inside the caller's transaction. False when it already fits."""
    if await embedding_dimension(conn) == dimension:
        return False
    indexes = await conn.fetch(
        """
        SELECT i.indexrelid::regclass::text AS name, pg_get_indexdef(i.indexrelid) AS definition
          FROM pg_index i
          JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
         WHERE i.indrelid = 'memory_units'::regclass AND a.attname = 'embedding'
        """
    )
    for index in indexes:
        await conn.execute(f"DROP INDEX {index['name']}")
    # The dimension is an int from the model, never text from a request: safe to format in.
    await conn.execute(
        f"ALTER TABLE memory_units ALTER COLUMN embedding TYPE vector({int(dimension)}) USING NULL"
    )
    for index in indexes:
        await conn.execute(index["definition"])
    return True


async def units_after(
    conn: asyncpg.Connection | asyncpg.Pool, after: UUID, limit: int
) -> list[tuple[UUID, str]]:
    """Facts in id order after `after` (keyset pages), for re-embedding every kept fact."""
    rows = await conn.fetch(
        "SELECT id, text FROM memory_units WHERE id > $1 ORDER BY id LIMIT $2", after, limit
    )
    return [(r["id"], r["text"]) for r in rows]


async def set_embeddings(
    conn: asyncpg.Connection | asyncpg.Pool, ids: Sequence[UUID], vectors: Sequence[np.ndarray]
) -> None:
    await conn.execute(
        """
        UPDATE memory_units m SET embedding = v.embedding
          FROM unnest($1::uuid[], $2::vector[]) AS v(id, embedding)
         WHERE m.id = v.id
        """,
        list(ids),
        list(vectors),
    )
