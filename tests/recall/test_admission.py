"""Admission: at most N recalls at once, the rest admitted in arrival order."""

from __future__ import annotations

import asyncio

from tempr.recall_api.admission import Admission


async def _run_all(admission: Admission, n: int) -> tuple[int, list[int]]:
    running = 0
    most = 0
    started: list[int] = []

    async def one(i: int) -> None:
        nonlocal running, most
        async with admission:
            started.append(i)
            running += 1
            most = max(most, running)
            await asyncio.sleep(0.01)
            running -= 1

    tasks = []
    for i in range(n):
        tasks.append(asyncio.create_task(one(i)))
        await asyncio.sleep(0)  # arrivals in order
    await asyncio.gather(*tasks)
    return most, started


async def test_a_limit_caps_recalls_at_once_and_admits_in_arrival_order() -> None:
    admission = Admission(3)
    most, started = await _run_all(admission, 12)
    assert most == 3
    assert started == list(range(12))
    assert admission.waiting == 0


async def test_no_limit_runs_every_recall_at_once() -> None:
    most, _ = await _run_all(Admission(0), 12)
    assert most == 12


async def test_a_cancelled_waiter_gives_up_its_place_and_no_slot_is_lost() -> None:
    admission = Admission(1)
    release = asyncio.Event()

    async def hold() -> None:
        async with admission:
            await release.wait()

    holder = asyncio.create_task(hold())
    await asyncio.sleep(0)
    waiter = asyncio.create_task(hold())
    await asyncio.sleep(0)
    assert admission.waiting == 1
    waiter.cancel()
    await asyncio.gather(waiter, return_exceptions=True)
    release.set()
    await holder
    most, _ = await _run_all(admission, 3)
    assert most == 1 and admission.waiting == 0
