"""Per-bank write locks: what keeps a bank-wide rewrite from deadlocking with the worker.

A replay (or a bank or document deletion) deletes many rows of one bank while the
materializer upserts rows of the same bank in another order (chunk, facts, entities, links,
journal); each could hold a row the other needs. So both take a transaction-scoped advisory
lock on the bank before touching any row: shared for the materializer (its batches still run
side by side), exclusive for the rewrite, and always in bank order. Nothing waits for a row
while holding another bank's lock out of order, so no cycle can form.
"""

from __future__ import annotations

from collections.abc import Iterable

import asyncpg

__all__ = ["lock_bank_for_rewrite", "share_banks_for_writes"]


async def share_banks_for_writes(conn: asyncpg.Connection, bank_ids: Iterable[str]) -> None:
    """Shared locks on every bank a batch writes, in bank order, at the start of its transaction."""
    banks = sorted(set(bank_ids))
    if banks:
        await conn.execute(
            "SELECT pg_advisory_xact_lock_shared(hashtextextended('tempr.bank-writes:' || b, 0)) "
            "FROM unnest($1::text[]) WITH ORDINALITY AS t(b, i) ORDER BY i",
            banks,
        )


async def lock_bank_for_rewrite(conn: asyncpg.Connection, bank_id: str) -> None:
    """Exclusive: waits for the materializer's batches of this bank and holds new ones off."""
    await conn.execute(
        "SELECT pg_advisory_xact_lock(hashtextextended('tempr.bank-writes:' || $1, 0))", bank_id
    )
