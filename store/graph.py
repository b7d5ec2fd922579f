"""Graph reads of the meta-path retriever: a frontier's typed neighbours, one statement per hop.

Edge types are the link types of ``memory_links`` plus ``entity``, which is read from
``unit_entities`` (facts that name the same entity) rather than from the entity links: those
are mostly links through a conversation's speakers, which join every fact to its neighbours in
time and say nothing about what a fact is about. Entities named in more than
``entity_max_mentions`` facts are left out for the same reason.

Semantic, temporal and entity links are stored once per pair and read in both directions;
``causes``/``caused_by`` keep their direction, each also read as the reverse of the other
(A caused_by B is B causes A).
"""

from __future__ import annotations

from collections.abc import Sequence
from uuid import UUID

import asyncpg

from tempr.store.recall import RecallFilters, compile_filters

__all__ = ["EDGE_TYPES", "frontier_neighbours", "passing_filters"]

EDGE_TYPES = ("semantic", "temporal", "entity", "causes", "caused_by")

# LATERAL keeps every lookup an index probe per requested node (links by from_id and by
# to_id, entities by unit and by entity): the cost follows the frontier, not the bank.
_NEIGHBOURS = """
    WITH req AS (
        SELECT DISTINCT r.id, r.hop, coalesce(u.occurred_start, u.mentioned_at) AS t
        FROM unnest($2::uuid[], $3::text[]) AS r(id, hop) JOIN memory_units u ON u.id = r.id
        WHERE u.bank_id = $1
    )
    SELECT r.id AS src, r.hop, n.dst, n.weight
    FROM req r CROSS JOIN LATERAL (
        SELECT e.dst, max(e.weight) AS weight FROM (
            SELECT l.to_id AS dst, l.weight::float8 AS weight FROM memory_links l
            WHERE l.from_id = r.id AND l.link_type = r.hop AND l.weight >= $5
            UNION ALL
            SELECT l.from_id, l.weight::float8 FROM memory_links l
            WHERE l.to_id = r.id AND l.weight >= $5 AND l.link_type = CASE r.hop
                WHEN 'causes' THEN 'caused_by' WHEN 'caused_by' THEN 'causes' ELSE r.hop END
        ) e
        WHERE e.dst <> r.id
        GROUP BY e.dst
        ORDER BY weight DESC, e.dst
        LIMIT $4
    ) n
    WHERE r.hop <> 'entity'
    UNION ALL
    SELECT r.id, r.hop, n.dst, n.weight
    FROM req r CROSS JOIN LATERAL (
        -- Weighted like an entity link (1 - 0.5^(shared+1)); ties go to the closest in time.
        SELECT ue2.unit_id AS dst, 1 - 0.5 ^ (count(*) + 1) AS weight,
               min(abs(extract(epoch FROM coalesce(b.occurred_start, b.mentioned_at) - r.t))) AS gap
        FROM unit_entities ue1
        JOIN entities en ON en.id = ue1.entity_id AND en.mention_count <= $6
        JOIN unit_entities ue2 ON ue2.entity_id = ue1.entity_id AND ue2.unit_id <> r.id
        JOIN memory_units b ON b.id = ue2.unit_id
        WHERE ue1.unit_id = r.id
        GROUP BY ue2.unit_id
        ORDER BY weight DESC, gap NULLS LAST, ue2.unit_id
        LIMIT $4
    ) n
    WHERE r.hop = 'entity'
"""


async def frontier_neighbours(
    conn: asyncpg.Connection,
    bank_id: str,
    requests: Sequence[tuple[UUID, str]],
    *,
    top_k: int,
    min_weight: float,
    entity_max_mentions: int,
) -> list[asyncpg.Record]:
    """``(src, hop, dst, weight)``: for each requested (node, edge type), its ``top_k``
    heaviest neighbours over that type (weight >= ``min_weight``), heaviest first."""
    if not requests:
        return []
    unknown = {hop for _, hop in requests} - set(EDGE_TYPES)
    if unknown:
        raise ValueError(f"unknown edge types {sorted(unknown)}; choose from {EDGE_TYPES}")
    ids = [node for node, _ in requests]
    hops = [hop for _, hop in requests]
    return await conn.fetch(_NEIGHBOURS, bank_id, ids, hops, top_k, min_weight, entity_max_mentions)


async def passing_filters(
    conn: asyncpg.Connection, bank_id: str, ids: Sequence[UUID], filters: RecallFilters
) -> set[UUID]:
    """Which of ``ids`` pass the request's filters (types, tags, time window)."""
    where, params = compile_filters(filters, 3)
    rows = await conn.fetch(
        f"SELECT u.id FROM memory_units u WHERE u.bank_id = $1 AND u.id = ANY($2::uuid[]){where}",
        bank_id,
        list(ids),
        *params,
    )
    return {r["id"] for r in rows}
