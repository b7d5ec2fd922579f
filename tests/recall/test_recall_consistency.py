"""Read-your-writes for recall: the `after` token wait, its timeout and its errors."""

from __future__ import annotations

import time

import asyncpg
import httpx
import pytest

from tempr.errors import ConsistencyTimeout, InvalidRequest
from tempr.recall_api.main import create_app
from tempr.recall_api.recall.consistency import wait_for_consistency
from tempr.schemas.api import ConsistencyToken
from tempr.store import consistency
from tempr.store.consistency import Wait
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


async def test_many_waits_share_one_poller_and_each_ends_on_its_own(
    db: asyncpg.Pool, api: httpx.Client, bank: str
) -> None:
    """Waiting recalls are polled together; one that times out leaves the others alone, and the
    poller goes away with the last wait."""
    import asyncio

    from tempr.recall_api.recall.consistency import _Poller

    tokens = {}
    for name in (bank, f"{bank}-2"):
        r = api.post(
            f"/v1/banks/{name}/memories", json={"items": [{"content": f"{name} planted tomatoes in May."}]}
        )
        assert r.status_code == 202, r.text
        tokens[name] = r.json()["consistency"]["token"]
    hopeless = asyncio.create_task(wait_for_consistency(db, bank, FAR_FUTURE, timeout_s=2.0))
    waits = [
        asyncio.create_task(wait_for_consistency(db, name, token, timeout_s=60))
        for name, token in tokens.items()
        for _ in range(4)
    ]
    await asyncio.sleep(0.3)
    assert list(_Poller._running) == [id(db)]  # one poller, whatever the number of waits
    assert any(w.bank_id == bank and w.seq == 999999999999 for w in _Poller._running[id(db)].waits)
    waited = await asyncio.gather(*waits)
    assert all(ms >= 0 for ms in waited)
    with pytest.raises(ConsistencyTimeout):
        await hopeless
    await asyncio.sleep(0.3)
    assert id(db) not in _Poller._running
    assert (
        await consistency.reached(
            db, [Wait(bank_id=n, seq=ConsistencyToken.decode_parts(t)[0]) for n, t in tokens.items()]
        )
    ) == [True, True]


async def test_reached_answers_each_wait_of_one_statement_in_order(
    db: asyncpg.Pool, api: httpx.Client, bank: str
) -> None:
    r = api.post(f"/v1/banks/{bank}/memories", json={"items": [{"content": "Mira bought a kayak."}]})
    assert r.status_code == 202, r.text
    await wait_for_consistency(db, bank, r.json()["consistency"]["token"], timeout_s=60)
    head = await max_seq(db, bank)
    other = f"{bank}-other"
    r = api.post(f"/v1/banks/{other}/memories", json={"items": [{"content": "Elsewhere."}]})
    journal = await journal_head(db)
    answers = await consistency.reached(
        db,
        [
            Wait(bank_id=bank, seq=head),
            Wait(bank_id=bank, seq=head + 10**9),
            Wait(bank_id=bank, seq=journal),  # another bank's position: not reached here
            Wait(bank_id=bank, seq=head - 1),
        ],
    )
    assert answers == [True, False, False, True]
    assert await consistency.reached(db, []) == []
