"""The throughput bench's load generator: Poisson arrivals, recalls timed from when they were
due, and both HTTP clients reading the same statuses from a real server."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from aiohttp import web

from bench.recall_throughput import _client, _paced_client, _poster, poisson_arrivals


def test_poisson_arrivals_keep_their_rate_and_window_and_repeat_with_the_seed() -> None:
    times = poisson_arrivals(500.0, 20.0, start=100.0)
    assert abs(len(times) - 10_000) < 300  # 3 standard deviations of a Poisson count
    assert all(100.0 < t < 120.0 for t in times)
    assert times == sorted(times)
    assert poisson_arrivals(500.0, 20.0, start=100.0) == times
    assert poisson_arrivals(500.0, 20.0, start=100.0, seed=1) != times


async def test_a_recall_waiting_for_a_free_connection_counts_its_wait() -> None:
    async def post(path: str, body: dict[str, Any]) -> int:
        await asyncio.sleep(0.05)
        return 200 if "fails" not in body["query"] else 500

    due = time.perf_counter()
    arrivals = iter(enumerate([due, due, due]))  # three due at once, one connection
    latencies: list[float] = []
    errors = await _paced_client(post, "b", ["q1", "q2", "fails"], arrivals, latencies)
    assert errors == 1
    assert len(latencies) == 2
    assert latencies[0] >= 50 and latencies[1] >= 100  # the second waited for the first


async def test_a_closed_loop_asks_each_question_in_turn_with_its_preset() -> None:
    bodies: list[dict[str, Any]] = []

    async def post(path: str, body: dict[str, Any]) -> int:
        bodies.append(body)
        await asyncio.sleep(0.01)
        return 200

    latencies: list[float] = []
    until = time.monotonic() + 0.1
    errors = await _client(post, "b", ["q0", "q1", "q2"], 1, until, latencies, "no-passage")
    assert errors == 0 and len(latencies) == len(bodies) >= 3
    assert [b["query"] for b in bodies[:3]] == ["q1", "q2", "q0"]
    assert {b["preset"] for b in bodies} == {"no-passage"}


@pytest.mark.parametrize("kind", ["httpx", "aiohttp"])
async def test_both_clients_read_the_status_of_a_real_server(kind: str, unused_tcp_port: int) -> None:
    seen: list[Any] = []

    async def recall(request: web.Request) -> web.Response:
        seen.append(await request.json())
        if request.match_info["bank"] == "missing":
            return web.json_response({"detail": "no such bank"}, status=404)
        return web.json_response({"results": [{"text": "x" * 5000}] * 20})

    app = web.Application()
    app.router.add_post("/v1/banks/{bank}/recall", recall)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", unused_tcp_port)
    await site.start()
    try:
        async with _poster(kind, f"http://127.0.0.1:{unused_tcp_port}", 2) as post:
            assert await post("/v1/banks/b/recall", {"query": "q"}) == 200
            assert await post("/v1/banks/missing/recall", {"query": "r"}) == 404
    finally:
        await runner.cleanup()
    assert seen == [{"query": "q"}, {"query": "r"}]
