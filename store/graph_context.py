"""What the resolver needs to see of its batch's banks: their entities and the facts new ones
may link to, each kind read for every bank of the batch in one statement."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from uuid import UUID

import asyncpg

from tempr.store.vector_params import vector_params

__all__ = [
    "entity_neighbours_across",
    "indexed_banks",
    "known_entities_of",
    "semantic_neighbours_across",
    "semantic_neighbours_of_many",
    "temporal_neighbours_of",
]

_POINT_COLUMNS = """
    u.id, coalesce(u.occurred_start, u.mentioned_at) AS when_at, u.embedding,
    coalesce((SELECT array_agg(ue.entity_id) FROM unit_entities ue WHERE ue.unit_id = u.id),
             '{}'::uuid[]) AS entity_ids
"""


async def known_entities_of(
    conn: asyncpg.Connection | asyncpg.Pool, bank_ids: Sequence[str]
) -> dict[str, list[asyncpg.Record]]:
    """Each bank's entities, for resolving mentions against."""
    found: dict[str, list[asyncpg.Record]] = {b: [] for b in bank_ids}
    for row in await conn.fetch(
        """
        SELECT bank_id, id, canonical_name, kind, aliases, mention_count, last_seen
        FROM entities WHERE bank_id = ANY($1::text[])
        """,
        list(bank_ids),
    ):
        found[row["bank_id"]].append(row)
    return found


async def temporal_neighbours_of(
    conn: asyncpg.Connection | asyncpg.Pool,
    windows: Sequence[tuple[str, datetime, datetime]],
    *,
    window: timedelta = timedelta(hours=24),
    limit: int = 400,
) -> list[list[asyncpg.Record]]:
    """For each (bank, start, end): the bank's facts within `window` of [start, end], latest
    first, `limit` of them."""
    if not windows:
        return []
    rows = await conn.fetch(
        f"""
        SELECT w.i, n.* FROM unnest($1::text[], $2::timestamptz[], $3::timestamptz[])
            WITH ORDINALITY AS w(bank, lo, hi, i)
        CROSS JOIN LATERAL (
            SELECT {_POINT_COLUMNS} FROM memory_units u
            WHERE u.bank_id = w.bank
              AND coalesce(u.occurred_start, u.mentioned_at) BETWEEN w.lo - $4::interval
                                                                 AND w.hi + $4::interval
            ORDER BY coalesce(u.occurred_start, u.mentioned_at) DESC
            LIMIT $5
        ) n
        ORDER BY w.i
        """,
        [b for b, _, _ in windows],
        [lo for _, lo, _ in windows],
        [hi for _, _, hi in windows],
        window,
        limit,
    )
    found: list[list[asyncpg.Record]] = [[] for _ in windows]
    for row in rows:
        found[row["i"] - 1].append(row)
    return found


# A bank with an HNSW index of its own (store/vector_indexes.py): one index probe per query.
_NEAREST_INDEXED = """
    SELECT q.i, n.id, n.r FROM unnest($2::vector[]) WITH ORDINALITY AS q(v, i)
    CROSS JOIN LATERAL (
        SELECT u.id, 1 AS r, u.embedding <=> q.v AS d
        FROM memory_units u
        WHERE u.bank_id = $1 AND u.embedding IS NOT NULL
        ORDER BY u.embedding <=> q.v
        LIMIT $4
    ) n
    WHERE 1 - n.d >= $3
"""


async def semantic_neighbours_of_many(
    conn: asyncpg.Connection | asyncpg.Pool,
    bank_id: str,
    embeddings: Sequence[Sequence[float]],
    *,
    min_cosine: float = 0.7,
    limit: int = 10,
    indexed: bool | None = None,
) -> list[asyncpg.Record]:
    """The nearest facts (cosine ≥ ``min_cosine``, ``limit`` each) of every embedding at once,
    one statement: exact for a bank without an index of its own (a shared index filtered by
    bank can miss a small bank's neighbours), through the bank's own index otherwise
    (``indexed``: whether it has one, when the caller knows). Each row is a neighbour with
    ``queries``, the 0-based positions of the embeddings it is among the nearest ``limit`` of."""
    if not embeddings:
        return []
    if indexed is None:
        indexed = bool(await indexed_banks(conn, [bank_id]))
    if not indexed:
        return await semantic_neighbours_across(
            conn, [(bank_id, e) for e in embeddings], min_cosine=min_cosine, limit=limit
        )
    return await conn.fetch(
        f"""
        WITH nearest AS ({_NEAREST_INDEXED})
        SELECT array_agg(n.i - 1 ORDER BY n.i) AS queries, {_POINT_COLUMNS}
        FROM nearest n JOIN memory_units u ON u.id = n.id
        WHERE n.r <= $4
        GROUP BY u.id
        """,
        bank_id,
        vector_params(embeddings),
        min_cosine,
        limit,
    )


async def indexed_banks(conn: asyncpg.Connection | asyncpg.Pool, bank_ids: Sequence[str]) -> set[str]:
    """The banks with an HNSW index of their own (store/vector_indexes.py)."""
    rows = await conn.fetch(
        "SELECT bank_id FROM bank_vector_indexes WHERE bank_id = ANY($1::text[])", list(bank_ids)
    )
    return {r["bank_id"] for r in rows}


async def semantic_neighbours_across(
    conn: asyncpg.Connection | asyncpg.Pool,
    queries: Sequence[tuple[str, Sequence[float]]],
    *,
    min_cosine: float = 0.7,
    limit: int = 10,
) -> list[asyncpg.Record]:
    """`semantic_neighbours_of_many` for (bank, embedding) queries of banks without an index of
    their own, exact, one statement for all: each bank's vectors are read once and scored
    against its own queries only. Rows carry ``queries``, 0-based positions in ``queries``."""
    if not queries:
        return []
    return await conn.fetch(
        f"""
        WITH q AS MATERIALIZED (
            SELECT i, bank, v FROM unnest($1::text[], $2::vector[]) WITH ORDINALITY AS q(bank, v, i)
        ), scored AS MATERIALIZED (
            SELECT q.i, u.id, u.embedding <=> q.v AS d
            FROM memory_units u JOIN q ON q.bank = u.bank_id
            WHERE u.bank_id = ANY($1::text[]) AND u.embedding IS NOT NULL
        ), nearest AS (
            SELECT i, id, row_number() OVER (PARTITION BY i ORDER BY d, id) AS r
            FROM scored WHERE 1 - d >= $3
        )
        SELECT array_agg(n.i - 1 ORDER BY n.i) AS queries, {_POINT_COLUMNS}
        FROM nearest n JOIN memory_units u ON u.id = n.id
        WHERE n.r <= $4
        GROUP BY u.id
        """,
        [b for b, _ in queries],
        vector_params([e for _, e in queries]),
        min_cosine,
        limit,
    )


async def entity_neighbours_across(
    conn: asyncpg.Connection | asyncpg.Pool,
    bank_ids: Sequence[str],
    entity_ids: Sequence[UUID],
    *,
    per_entity: int = 10,
) -> list[asyncpg.Record]:
    """The most recent facts of each entity (high-fanout entities stay bounded); ``via``: the
    entities a row is among the most recent facts of. An entity belongs to one bank (its id is
    derived from the bank's), so one statement serves entities of many banks."""
    if not entity_ids:
        return []
    return await conn.fetch(
        f"""
        SELECT array_agg(r.entity_id) AS via, {_POINT_COLUMNS}
        FROM (
            SELECT ue.entity_id, ue.unit_id, row_number() OVER (
                PARTITION BY ue.entity_id
                ORDER BY coalesce(m.occurred_start, m.mentioned_at) DESC NULLS LAST, ue.unit_id) AS r
            FROM unit_entities ue JOIN memory_units m ON m.id = ue.unit_id
            WHERE ue.bank_id = ANY($1::text[]) AND ue.entity_id = ANY($2::uuid[])
        ) r JOIN memory_units u ON u.id = r.unit_id
        WHERE r.r <= $3
        GROUP BY u.id
        """,
        sorted(set(bank_ids)),
        list(entity_ids),
        per_entity,
    )
