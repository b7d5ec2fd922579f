"""Retention against the live stack: the sweeper forgets raw messages and facts older than a
bank keeps them, tombstoned like forgetting by hand; other banks and newer rows stay."""

from __future__ import annotations

import asyncio

import asyncpg
import httpx
import pytest

from tempr.store.pool import create_pool
from tempr.store.retention import RETENTION_LOCK
from tempr.streams.retention import sweep_retention
from tempr.streams.runtime import Supervisor
from tests.integration.test_bank_replay import HIKE, conversation, facts, retain, settled

pytestmark = pytest.mark.integration


def run(dsn: str, query: str, *args: object) -> None:
    async def go() -> None:
        conn = await asyncpg.connect(dsn)
        try:
            await conn.execute(query, *args)
        finally:
            await conn.close()

    asyncio.run(go())


def sweep(dsn: str) -> dict[str, dict[str, int]]:
    async def go() -> dict[str, dict[str, int]]:
        pool = await create_pool(dsn, max_size=2)
        try:
            swept = await sweep_retention(pool, batch=2)  # small batches: several transactions
            assert swept.ran
            return {"messages": swept.messages, "facts": swept.facts}
        finally:
            await pool.close()

    return asyncio.run(go())


def test_the_sweeper_forgets_what_a_bank_keeps_no_longer(
    api: httpx.Client, stack: Supervisor, bank: str
) -> None:
    dsn = stack.settings.database_url or ""
    keeper = f"{bank}-keeps"
    items = conversation("hike", HIKE)
    retain(api, bank, items)
    retain(api, keeper, items)
    settled(api, bank)
    settled(api, keeper)
    r = api.patch(
        f"/v1/banks/{bank}", json={"config": {"message_retention_days": 30, "fact_retention_days": 90}}
    )
    assert r.status_code == 200 and r.json()["config"]["message_retention_days"] == 30
    before = facts(api, bank)
    # Age the first two turns past 30 days, and one fact past 90 (in both banks: only one has a policy).
    for b in (bank, keeper):
        run(dsn, "UPDATE messages SET received_at = now() - interval '40 days' WHERE bank_id = $1"
            " AND message_id = ANY($2::text[])", b, ["hike-0", "hike-1"])  # fmt: skip
        run(dsn, "UPDATE memory_units SET created_at = now() - interval '100 days' WHERE bank_id = $1"
            " AND 'hike-3' = ANY(source_message_ids)", b)  # fmt: skip
    old_facts = {i for i, f in before.items() if "hike-3" in f["source_message_ids"]}
    assert old_facts

    swept = sweep(dsn)
    assert swept["messages"][bank] == 2 and swept["facts"][bank] == len(old_facts)
    assert keeper not in swept["messages"] and keeper not in swept["facts"]

    after = facts(api, bank)
    assert set(after) == set(before) - old_facts, "message retention keeps the facts; fact retention does not"
    assert len(facts(api, keeper)) == len(before)
    r = api.post(f"/v1/banks/{bank}/memories", json={"items": [items[0]]})
    assert r.status_code == 409 and "hike-0" in r.json()["detail"]
    assert sweep(dsn)["messages"].get(bank, 0) == 0, "a second sweep finds nothing"
    audited = api.get("/v1/audit", params={"bank_id": bank}).json()["items"]
    by_action: dict[str, int] = {}
    for row in (r for r in audited if r["actor"] == "retention"):
        by_action[row["action"]] = by_action.get(row["action"], 0) + row["detail"]["forgotten"]
    assert by_action == {"RETENTION messages": 2, "RETENTION facts": len(old_facts)}

    # A replay rebuilds from what the journal still holds: the expired turns and facts stay away.
    assert api.post(f"/v1/banks/{bank}/replay").status_code == 202
    settled(api, bank)
    assert not set(facts(api, bank)) & old_facts


def test_one_sweeper_at_a_time_and_the_lock_ends_with_the_sweep(stack: Supervisor) -> None:
    dsn = stack.settings.database_url or ""

    async def go() -> None:
        other = await asyncpg.connect(dsn)  # another worker's sweeper, mid-sweep
        # The worker's pool keeps sessions on release: a lock left on one would stay held.
        pool = await create_pool(dsn, max_size=2, reset_sessions=False)
        try:
            sweeping = other.transaction()
            await sweeping.start()
            assert await other.fetchval("SELECT pg_try_advisory_xact_lock($1)", RETENTION_LOCK)
            assert not (await sweep_retention(pool)).ran
            await sweeping.rollback()
            assert (await sweep_retention(pool)).ran
            # Nothing of the sweep holds the lock now, though its connections stay in the pool.
            assert await other.fetchval("SELECT pg_try_advisory_lock($1)", RETENTION_LOCK)
            assert not (await sweep_retention(pool)).ran
            await other.execute("SELECT pg_advisory_unlock($1)", RETENTION_LOCK)
        finally:
            await pool.close()
            await other.close()

    asyncio.run(go())
