"""Links between memory units (temporal, semantic, entity, causal)."""

from __future__ import annotations

from collections.abc import Iterable

import asyncpg

from tempr.schemas.events import MemoryLink

__all__ = ["strongest", "upsert_links"]

# One statement for any number of links: the joins drop a link whose end is not stored (a fact
# folded into a near-duplicate, or forgotten), set-based rather than two lookups per row. An
# existing link only changes when the new weight is higher, so a redelivery writes nothing.
_UPSERT = """
    INSERT INTO memory_links (from_id, to_id, link_type, weight, bank_id)
    SELECT l.from_id, l.to_id, l.link_type, l.weight, $5
    FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::real[]) AS l(from_id, to_id, link_type, weight)
    JOIN memory_units a ON a.id = l.from_id AND a.bank_id = $5
    JOIN memory_units b ON b.id = l.to_id AND b.bank_id = $5
    ON CONFLICT (from_id, to_id, link_type) DO UPDATE SET weight = EXCLUDED.weight
    WHERE memory_links.weight < EXCLUDED.weight
"""


def strongest(links: Iterable[MemoryLink]) -> list[MemoryLink]:
    """One link per (from, to, type), the heaviest, in key order (one statement may not touch
    a row twice, and a fixed order keeps concurrent writers from deadlocking)."""
    best: dict[tuple[int, int, str], MemoryLink] = {}
    for link in links:
        key = (link.from_id.int, link.to_id.int, link.link_type)
        if key not in best or link.weight > best[key].weight:
            best[key] = link
    return [best[k] for k in sorted(best)]


async def upsert_links(conn: asyncpg.Connection, bank_id: str, links: Iterable[MemoryLink]) -> None:
    rows = [lk for lk in strongest(links) if lk.from_id != lk.to_id]
    if not rows:
        return
    await conn.execute(
        _UPSERT,
        [lk.from_id for lk in rows],
        [lk.to_id for lk in rows],
        [lk.link_type for lk in rows],
        [lk.weight for lk in rows],
        bank_id,
    )
