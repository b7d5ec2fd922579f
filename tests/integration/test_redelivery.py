"""Which journal entries the sweeper re-publishes: never a publish still in flight."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import asyncpg
import pytest

from tempr.schemas.events import MessageEvent
from tempr.store import messages

pytestmark = pytest.mark.integration


def _event(bank: str, message_id: str) -> MessageEvent:
    return MessageEvent(
        event_id=uuid.uuid4(),
        bank_id=bank,
        message_id=message_id,
        content=f"note {message_id}",
        received_at=datetime.now(UTC),
    )


async def test_only_entries_unpublished_past_the_grace_or_overdue_are_due(
    db: asyncpg.Pool, bank: str
) -> None:
    just_journaled, long_unpublished, published, overdue = (_event(bank, f"m{i}") for i in range(4))
    async with db.acquire() as conn:
        # Never committed: the running stack's own sweeper cannot see (or take) these rows.
        tx = conn.transaction()
        await tx.start()
        try:
            await messages.journal_messages(conn, [just_journaled, long_unpublished, published, overdue])
            await conn.execute(
                "UPDATE messages SET received_at = now() - interval '60 seconds' WHERE id = $1",
                long_unpublished.event_id,
            )
            await messages.mark_published(conn, [published.event_id, overdue.event_id])
            await conn.execute(
                "UPDATE messages SET published_at = now() - interval '200 seconds' WHERE id = $1",
                overdue.event_id,
            )

            async def due(older_than_s: float, unpublished_after_s: float) -> set[uuid.UUID]:
                rows = await messages.due_for_redelivery(
                    conn, older_than_s=older_than_s, unpublished_after_s=unpublished_after_s
                )
                return {e.event_id for _, e in rows if e.bank_id == bank}

            # The sweeper: a publish may still be in flight for 30 s; published ones wait 120 s.
            assert await due(120, 30) == {long_unpublished.event_id, overdue.event_id}
            # Start-up with an empty embedded broker: everything not yet materialized.
            assert await due(0, 0) == {
                e.event_id for e in (just_journaled, long_unpublished, published, overdue)
            }
        finally:
            await tx.rollback()
