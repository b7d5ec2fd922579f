"""Canonical entities and which memory units mention them."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from uuid import UUID

import asyncpg

from tempr.schemas.events import ResolvedEntity, UnitEntity

__all__ = [
    "bank_entities",
    "insert_missing_entities",
    "link_units_to_entities",
    "merge_entities",
    "refresh_mention_counts",
    "upsert_entities",
]


def merge_entities(entities: Iterable[ResolvedEntity]) -> list[ResolvedEntity]:
    """One row per entity, as the upsert would leave it after each in turn (aliases joined,
    the earliest first and the latest last sighting, the first kind other than 'other'), in id
    order: writers that lock entities in one order cannot deadlock."""
    merged: dict[UUID, ResolvedEntity] = {}
    for e in entities:
        seen = merged.get(e.entity_id)
        if seen is None:
            merged[e.entity_id] = e
            continue
        merged[e.entity_id] = seen.model_copy(
            update={
                "aliases": sorted(set(seen.aliases) | set(e.aliases)),
                "kind": e.kind if seen.kind == "other" else seen.kind,
                "first_seen": min((t for t in (seen.first_seen, e.first_seen) if t), default=None),
                "last_seen": max((t for t in (seen.last_seen, e.last_seen) if t), default=None),
            }
        )
    return [merged[k] for k in sorted(merged, key=lambda k: k.int)]


async def upsert_entities(conn: asyncpg.Connection, bank_id: str, entities: Sequence[ResolvedEntity]) -> None:
    await conn.executemany(
        """
        INSERT INTO entities (id, bank_id, canonical_name, kind, aliases, first_seen, last_seen)
        VALUES ($1, $2, $3, $4, $5, $6, $7)
        ON CONFLICT (id) DO UPDATE SET
            aliases = ARRAY(SELECT DISTINCT unnest(entities.aliases || EXCLUDED.aliases)),
            kind = CASE WHEN entities.kind = 'other' THEN EXCLUDED.kind ELSE entities.kind END,
            first_seen = LEAST(entities.first_seen, EXCLUDED.first_seen),
            last_seen = GREATEST(entities.last_seen, EXCLUDED.last_seen)
        """,
        [
            (e.entity_id, bank_id, e.canonical_name, e.kind, e.aliases, e.first_seen, e.last_seen)
            for e in merge_entities(entities)
        ],
    )


async def insert_missing_entities(
    conn: asyncpg.Connection, bank_id: str, entities: Sequence[ResolvedEntity]
) -> None:
    """Create the entities not stored yet, touching (and locking) none that are: the full
    upsert can then wait for the end of a long transaction, so its row locks are held briefly."""
    await conn.executemany(
        """
        INSERT INTO entities (id, bank_id, canonical_name, kind, aliases, first_seen, last_seen)
        VALUES ($1, $2, $3, $4, $5, $6, $7)
        ON CONFLICT (id) DO NOTHING
        """,
        [
            (e.entity_id, bank_id, e.canonical_name, e.kind, e.aliases, e.first_seen, e.last_seen)
            for e in merge_entities(entities)
        ],
    )


async def link_units_to_entities(conn: asyncpg.Connection, bank_id: str, pairs: Sequence[UnitEntity]) -> None:
    await conn.execute(
        """
        INSERT INTO unit_entities (unit_id, entity_id, bank_id)
        SELECT p.unit_id, p.entity_id, $3 FROM unnest($1::uuid[], $2::uuid[]) AS p(unit_id, entity_id)
        ON CONFLICT DO NOTHING
        """,
        [p.unit_id for p in pairs],
        [p.entity_id for p in pairs],
        bank_id,
    )


async def refresh_mention_counts(conn: asyncpg.Connection, entity_ids: Sequence[UUID]) -> None:
    """Counted from unit_entities, never incremented: redelivery must not inflate it."""
    await conn.execute(
        """
        UPDATE entities e SET mention_count = (
            SELECT count(*) FROM unit_entities ue WHERE ue.entity_id = e.id)
        WHERE e.id = ANY($1::uuid[])
        """,
        list(entity_ids),
    )


async def bank_entities(pool: asyncpg.Pool | asyncpg.Connection, bank_id: str) -> list[asyncpg.Record]:
    return await pool.fetch(
        """
        SELECT id, canonical_name, kind, aliases, mention_count, first_seen, last_seen
        FROM entities WHERE bank_id = $1 ORDER BY mention_count DESC, canonical_name
        """,
        bank_id,
    )


_ENTITY_COLUMNS = "id, canonical_name, kind, aliases, mention_count, first_seen, last_seen"


async def list_entities(pool: asyncpg.Pool, bank_id: str, *, limit: int, offset: int) -> list[asyncpg.Record]:
    return await pool.fetch(
        f"""
        SELECT {_ENTITY_COLUMNS} FROM entities WHERE bank_id = $1
        ORDER BY mention_count DESC, canonical_name, id LIMIT $2 OFFSET $3
        """,
        bank_id,
        limit,
        offset,
    )


async def count_entities(pool: asyncpg.Pool, bank_id: str) -> int:
    return await pool.fetchval("SELECT count(*) FROM entities WHERE bank_id = $1", bank_id)


async def get_entity(pool: asyncpg.Pool, bank_id: str, entity_id: UUID) -> asyncpg.Record | None:
    return await pool.fetchrow(
        f"SELECT {_ENTITY_COLUMNS} FROM entities WHERE bank_id = $1 AND id = $2", bank_id, entity_id
    )


async def entity_facts(pool: asyncpg.Pool, entity_id: UUID, *, limit: int = 200) -> list[asyncpg.Record]:
    return await pool.fetch(
        """
        SELECT u.id, u.text, u.fact_type, u.occurred_start, u.mentioned_at, u.source_message_ids
        FROM unit_entities ue JOIN memory_units u ON u.id = ue.unit_id
        WHERE ue.entity_id = $1
        ORDER BY coalesce(u.occurred_start, u.mentioned_at), u.id
        LIMIT $2
        """,
        entity_id,
        limit,
    )
