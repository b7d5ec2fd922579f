"""Links between memory units (temporal, semantic, entity, causal)."""

from __future__ import annotations

from collections.abc import Sequence

import asyncpg

from tempr.schemas.events import MemoryLink

__all__ = ["upsert_links"]


async def upsert_links(conn: asyncpg.Connection, bank_id: str, links: Sequence[MemoryLink]) -> None:
    await conn.executemany(
        """
        INSERT INTO memory_links (from_id, to_id, link_type, weight, bank_id)
        SELECT $1, $2, $3, $4, $5
        WHERE EXISTS (SELECT 1 FROM memory_units WHERE id = $1)
          AND EXISTS (SELECT 1 FROM memory_units WHERE id = $2)
        ON CONFLICT (from_id, to_id, link_type) DO UPDATE
            SET weight = GREATEST(memory_links.weight, EXCLUDED.weight)
        """,
        [(lk.from_id, lk.to_id, lk.link_type, lk.weight, bank_id) for lk in links],
    )
