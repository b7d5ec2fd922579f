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
    "EmbeddingModelMismatch",
    "check_embedding_model",
    "embedding_dimension",
    "record_embedding_model",
    "recorded_embedding_model",
    "resize_embedding_column",
    "set_embeddings",
    "units_after",
]


class EmbeddingDimensionMismatch(TemprError):
    """The configured embedding model's vectors do not fit the database column."""


class EmbeddingModelMismatch(EmbeddingDimensionMismatch):
    """The configured model has the column's dimension but is not the model the vectors came from."""


async def embedding_dimension(conn: asyncpg.Connection | asyncpg.Pool) -> int | None:
    """`memory_units.embedding`'s declared dimension (pgvector keeps it as the type modifier)."""
    typmod: int | None = await conn.fetchval(
        """
        SELECT atttypmod FROM pg_attribute
         WHERE attrelid = 'memory_units'::regclass AND attname = 'embedding' AND NOT attisdropped
        """
    )
    return typmod if typmod is not None and typmod > 0 else None


async def check_embedding_model(conn: asyncpg.Connection | asyncpg.Pool, model: str, dimension: int) -> None:
    """Refuse a model whose vectors do not fit the column, or that is not the model the stored
    vectors were made with."""
    column = await embedding_dimension(conn)
    if column is not None and column != dimension:
        raise EmbeddingDimensionMismatch(
            f"the embedding model {model!r} makes {dimension}-dimensional vectors, but the database "
            f"stores vector({column}) (memory_units.embedding). To switch models run "
            f"`tempr migrate --embedding-model {model}` with the same settings: it re-sizes the column "
            f"and its indexes, then replays every bank; or set TEMPR_EMBEDDING_MODEL back to the "
            f"{column}-dimensional model the data was embedded with."
        )
    recorded = await recorded_embedding_model(conn)
    if recorded is None:
        # A new installation, or one from before the model was recorded: the configured model
        # is taken as the one its vectors came from (the dimension check above passed).
        await record_embedding_model(conn, model, dimension, replace=False)
    elif recorded != model:
        raise EmbeddingModelMismatch(
            f"the embedding model is {model!r}, but the stored vectors were made with {recorded!r} "
            f"(both {dimension}-dimensional, so the column cannot tell them apart; mixing them "
            f"would make recall silently wrong). To switch models run "
            f"`tempr migrate --embedding-model {model}` with the same settings: it re-embeds every "
            f"bank; or set TEMPR_EMBEDDING_MODEL back to {recorded!r}."
        )


async def recorded_embedding_model(conn: asyncpg.Connection | asyncpg.Pool) -> str | None:
    name: str | None = await conn.fetchval("SELECT name FROM embedding_model")
    return name


async def record_embedding_model(
    conn: asyncpg.Connection | asyncpg.Pool, model: str, dimension: int, *, replace: bool
) -> None:
    """Record the model the vectors are made with; `replace=False` keeps a row already there
    (several processes start at once)."""
    conflict = (
        "DO UPDATE SET name = excluded.name, dimension = excluded.dimension, recorded_at = now()"
        if replace
        else "DO NOTHING"
    )
    await conn.execute(
        f"INSERT INTO embedding_model (name, dimension) VALUES ($1, $2) ON CONFLICT (singleton) {conflict}",
        model,
        dimension,
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
