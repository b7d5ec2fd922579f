"""How far the materializer got, per bank and source partition."""

from __future__ import annotations

from collections.abc import Mapping

import asyncpg

__all__ = ["WatermarkKey", "advance_watermarks"]

WatermarkKey = tuple[str, str, int]  # bank, topic, partition


async def advance_watermarks(conn: asyncpg.Connection, offsets: Mapping[WatermarkKey, int]) -> None:
    """Raise each (bank, topic, partition)'s offset to at least the given one, in one statement."""
    if not offsets:
        return
    keys = sorted(offsets)  # one lock order for concurrent batches
    await conn.execute(
        """
        INSERT INTO watermarks (bank_id, topic, partition, "offset")
        SELECT * FROM unnest($1::text[], $2::text[], $3::int[], $4::bigint[])
        ON CONFLICT (bank_id, topic, partition) DO UPDATE
            SET "offset" = GREATEST(watermarks."offset", EXCLUDED."offset"), updated_at = now()
        """,
        [k[0] for k in keys],
        [k[1] for k in keys],
        [k[2] for k in keys],
        [offsets[k] for k in keys],
    )
