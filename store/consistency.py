"""Read-your-writes: which `after` tokens a bank's materialized state has reached, many at once."""

from __future__ import annotations

from collections.abc import Sequence

import asyncpg
from pydantic import BaseModel, ConfigDict

__all__ = ["Wait", "reached"]


class Wait(BaseModel):
    """A token's journal position in one bank, and its corrections' position if it has one."""

    model_config = ConfigDict(frozen=True)

    bank_id: str
    seq: int
    correction_seq: int | None = None


async def reached(conn: asyncpg.Connection | asyncpg.Pool, waits: Sequence[Wait]) -> list[bool]:
    """For each wait: its bank's head is at or past `seq` (a forgotten message keeps its place,
    so a token issued for it counts), nothing of the bank at or before `seq` waits to be
    materialized (parked messages aside), and no correction at or before `correction_seq` waits
    to be applied. One statement for every waiter of a poll."""
    if not waits:
        return []
    rows = await conn.fetch(
        """
        SELECT w.i,
               greatest((SELECT coalesce(max(m.seq), 0) FROM messages m WHERE m.bank_id = w.bank),
                        (SELECT coalesce(max(f.seq), 0) FROM forgotten_messages f WHERE f.bank_id = w.bank))
                   >= w.seq
               AND NOT EXISTS (SELECT 1 FROM messages m
                               WHERE m.bank_id = w.bank AND m.seq <= w.seq
                                 AND m.processed_at IS NULL AND m.parked_at IS NULL)
               AND (w.cseq IS NULL
                    OR NOT EXISTS (SELECT 1 FROM fact_corrections c
                                   WHERE c.bank_id = w.bank AND c.seq <= w.cseq AND c.applied_at IS NULL))
               AS reached
        FROM unnest($1::text[], $2::bigint[], $3::bigint[]) WITH ORDINALITY AS w(bank, seq, cseq, i)
        """,
        [w.bank_id for w in waits],
        [w.seq for w in waits],
        [w.correction_seq for w in waits],
    )
    by_index = {row["i"]: bool(row["reached"]) for row in rows}
    return [by_index[i] for i in range(1, len(waits) + 1)]
