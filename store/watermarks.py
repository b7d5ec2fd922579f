"""How far the materializer got, per bank and source partition."""

from __future__ import annotations

import asyncpg

__all__ = ["advance_watermark"]


async def advance_watermark(
    conn: asyncpg.Connection, bank_id: str, topic: str, partition: int, offset: int
) -> None:
    await conn.execute(
        """
        INSERT INTO watermarks (bank_id, topic, partition, "offset") VALUES ($1, $2, $3, $4)
        ON CONFLICT (bank_id, topic, partition) DO UPDATE
            SET "offset" = GREATEST(watermarks."offset", EXCLUDED."offset"), updated_at = now()
        """,
        bank_id,
        topic,
        partition,
        offset,
    )
