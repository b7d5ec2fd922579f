"""Read-your-writes for recall: the `after` token wait, its timeout and its errors."""

from __future__ import annotations

import time

import asyncpg
import httpx
import pytest

from tempr.errors import ConsistencyTimeout, InvalidRequest
from tempr.recall_api.main import create_app
from tempr.recall_api.recall.pipeline import wait_for_consistency
from tempr.store.messages import max_seq
from tempr.store.recall import journal_head
from tempr.streams.runtime import Supervisor

pytestmark = pytest.mark.integration

FAR_FUTURE = "j999999999999"


async def test_token_already_materialized_returns_at_once(db: asyncpg.Pool, bank: str) -> None:
    head = await max_seq(db, bank)
    waited_ms = await wait_for_consistency(db, bank, f"j{head}", timeout_s=5)
    assert waited_ms < 1000


async def test_another_banks_token_is_waited_on_not_trusted(
    db: asyncpg.Pool, api: httpx.Client, bank: str
) -> None:
    """How far the journal got for other banks must not show through this bank's wait."""
    other = api.post(f"/v1/banks/{bank}-other/memories", json={"items": [{"content": "Elsewhere."}]})
    assert other.status_code == 202, other.text
    head = await journal_head(db)
    assert head > await max_seq(db, bank)
    with pytest.raises(ConsistencyTimeout):
        await wait_for_consistency(db, bank, f"j{head}", timeout_s=0.3)


async def test_future_token_times_out(db: asyncpg.Pool, bank: str) -> None:
    started = time.monotonic()
    with pytest.raises(ConsistencyTimeout, match=r"within 0\.3s"):
        await wait_for_consistency(db, bank, FAR_FUTURE, timeout_s=0.3)
    assert 0.3 <= time.monotonic() - started < 3


@pytest.mark.parametrize("token", ["42", "j", "jx1", "k12", "j-1"])
async def test_malformed_token_is_invalid(db: asyncpg.Pool, bank: str, token: str) -> None:
    with pytest.raises(InvalidRequest, match="after"):
        await wait_for_consistency(db, bank, token, timeout_s=0.1)


async def test_endpoint_maps_timeout_to_504(stack: Supervisor, bank: str) -> None:
    app = create_app(stack.settings.model_copy(update={"max_consistency_wait_s": 0.3}))
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
            r = await client.post(f"/v1/banks/{bank}/recall", json={"query": "anything", "after": FAR_FUTURE})
    assert r.status_code == 504
    assert FAR_FUTURE in r.json()["detail"]


async def test_a_recall_waiting_for_its_write_holds_no_admission_slot(stack: Supervisor, bank: str) -> None:
    import asyncio

    settings = stack.settings.model_copy(update={"max_consistency_wait_s": 3.0, "recall_concurrency": 1})
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost", timeout=30) as client:
            waiting = asyncio.create_task(
                client.post(f"/v1/banks/{bank}/recall", json={"query": "anything", "after": FAR_FUTURE})
            )
            await asyncio.sleep(0.2)  # it is waiting for the token now
            started = time.monotonic()
            r = await client.post(f"/v1/banks/{bank}/recall", json={"query": "anything", "trace": True})
            took = time.monotonic() - started
            assert not waiting.done()
            assert (await waiting).status_code == 504
    assert r.status_code == 200, r.text
    assert took < 2.5  # not queued behind the 3 s wait
    assert "admission" in r.json()["trace"]["timings_ms"]
