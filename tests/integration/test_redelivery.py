"""Which journal entries the sweeper re-publishes: never a publish still in flight, never an
entry still queued for the segmenter, never a parked one."""

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
    just_journaled, long_unpublished, published, overdue, queued, parked = (
        _event(bank, f"m{i}") for i in range(6)
    )
    async with db.acquire() as conn:
        # Never committed: the running stack's own sweeper cannot see (or take) these rows.
        tx = conn.transaction()
        await tx.start()
        try:
            await messages.journal_messages(
                conn, [just_journaled, long_unpublished, published, overdue, queued, parked]
            )
            await conn.execute(
                "UPDATE messages SET received_at = now() - interval '60 seconds' WHERE id = $1",
                long_unpublished.event_id,
            )
            await messages.mark_published(
                conn, [published.event_id, overdue.event_id, queued.event_id, parked.event_id]
            )
            # Overdue: the segmenter received it, then it stalled downstream. Queued: published
            # as long ago, never received yet (a backlog, or an outage): still in progress.
            await conn.execute(
                "UPDATE messages SET published_at = now() - interval '200 seconds',"
                " attempts = CASE WHEN id = $1 THEN 1 ELSE 0 END WHERE id = ANY($2::uuid[])",
                overdue.event_id,
                [overdue.event_id, queued.event_id, parked.event_id],
            )
            await conn.execute("UPDATE messages SET parked_at = now() WHERE id = $1", parked.event_id)

            async def due(older_than_s: float, unpublished_after_s: float) -> set[uuid.UUID]:
                rows = await messages.due_for_redelivery(
                    conn, older_than_s=older_than_s, unpublished_after_s=unpublished_after_s
                )
                return {e.event_id for e in rows if e.payload["bank_id"] == bank}

            # The sweeper: a publish may still be in flight for 30 s; published ones wait 120 s.
            assert await due(120, 30) == {long_unpublished.event_id, overdue.event_id}
            # Start-up with an empty embedded broker: everything not yet materialized or parked.
            assert await due(0, 0) == {
                e.event_id for e in (just_journaled, long_unpublished, published, overdue, queued)
            }
        finally:
            await tx.rollback()


async def test_a_backlog_behind_the_segmenter_is_not_re_published_but_an_entry_it_passed_is(
    db: asyncpg.Pool, bank: str
) -> None:
    """A stream behind by more than the redelivery age: every waiting entry was received by
    the segmenter and is queued downstream. Re-publishing them doubled the load every sweep."""
    other = f"{bank}-busy"
    stalled, queued_ahead, passed, later_done, lost_long_ago, never_received = (
        _event(bank, "a"),
        _event(other, "b"),
        _event(f"{bank}-c", "c"),
        _event(f"{bank}-c", "d"),
        _event(f"{bank}-e", "e"),
        _event(f"{bank}-f", "f"),
    )
    rows = [stalled, queued_ahead, passed, later_done, lost_long_ago, never_received]
    async with db.acquire() as conn:
        tx = conn.transaction()
        await tx.start()
        try:
            await messages.journal_messages(conn, rows)
            await messages.mark_published(conn, [r.event_id for r in rows])
            ages = [
                (stalled, 200),  # received, waiting; nothing received after it still waits
                (queued_ahead, 150),
                (passed, 200),  # received, waiting; a later entry of its own bank is materialized
                (later_done, 190),
                (lost_long_ago, 1300),  # past the queued bound, received: still only if passed
                (never_received, 1300),  # past the queued bound and never received: lost on the way
            ]
            for event, age in ages:
                await conn.execute(
                    "UPDATE messages SET received_at = now() - make_interval(secs => $2),"
                    " published_at = now() - make_interval(secs => $2),"
                    " attempts = CASE WHEN $3 THEN publish_count ELSE 0 END WHERE id = $1",
                    event.event_id,
                    float(age),
                    event is not never_received,
                )
            await conn.execute("UPDATE messages SET processed_at = now() WHERE id = $1", later_done.event_id)
            # Another bank's entry received 1,250 s ago (and re-published a minute ago, so not due
            # itself) still waits: lost_long_ago's window is not passed yet.
            await conn.execute(
                "UPDATE messages SET received_at = now() - interval '1250 seconds',"
                " published_at = now() - interval '60 seconds' WHERE id = $1",
                queued_ahead.event_id,
            )

            async def due() -> set[uuid.UUID]:
                found = await messages.due_for_redelivery(conn, older_than_s=120, unpublished_after_s=30)
                return {e.event_id for e in found if e.payload["bank_id"].startswith(bank)}

            assert await due() == {passed.event_id, never_received.event_id, stalled.event_id}
            # Now the entry received after `stalled` waits too: a backlog, nothing is due there.
            await conn.execute(
                "UPDATE messages SET received_at = now() - interval '150 seconds' WHERE id = $1",
                queued_ahead.event_id,
            )
            assert await due() == {passed.event_id, never_received.event_id, lost_long_ago.event_id}
        finally:
            await tx.rollback()
