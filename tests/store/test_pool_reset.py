"""A pool that keeps sessions on release: no reset statement, open transactions still rolled back."""

from __future__ import annotations

from pathlib import Path

import pytest

from tempr.store.pool import create_pool, reachable
from tempr.streams.runtime import Supervisor

pytestmark = pytest.mark.integration


async def test_a_pool_without_session_reset_keeps_session_state_but_not_transactions(
    stack: Supervisor,
) -> None:
    assert stack.settings.database_url
    for reset in (True, False):
        pool = await create_pool(stack.settings.database_url, min_size=1, max_size=1, reset_sessions=reset)
        try:
            async with pool.acquire() as conn:
                await conn.execute("SET application_name = 'left-over'")
                tx = conn.transaction()
                await tx.start()  # left open on purpose
                await conn.execute("CREATE TEMP TABLE t_left (x int) ON COMMIT DROP")
            async with pool.acquire() as conn:  # the same connection (max_size 1)
                name = await conn.fetchval("SHOW application_name")
                assert not conn.is_in_transaction()
                assert await conn.fetchval("SELECT to_regclass('pg_temp.t_left')") is None
        finally:
            await pool.close()
        # asyncpg's reset sets the session back; without it the session's own settings stay.
        assert (name == "left-over") is (not reset)


async def test_reachable_tells_a_database_that_answers_from_one_that_is_gone(
    stack: Supervisor, tmp_path: Path
) -> None:
    assert stack.settings.database_url
    up = await create_pool(stack.settings.database_url, min_size=1, max_size=1)
    gone = await create_pool(f"postgresql://postgres:@/postgres?host={tmp_path}", min_size=0, max_size=1)
    try:
        assert await reachable(up) is True
        assert await reachable(gone, timeout_s=2) is False
    finally:
        await up.close()
        await gone.close()
