"""What the access check costs a request: the same routes on an open app and on an app that
requires keys, over one embedded Postgres and broker, calls interleaved so that machine load
hits both alike.

Both apps run in this process (their lifespans started by hand) behind `httpx.ASGITransport`,
so the figures are the app's own time, without sockets. The key used sees `bench-*` (not `*`),
so bank listings run the pattern filter. Rate limits are off in both (they would 429).

    python -m bench.auth_overhead [--rounds 300] [--json bench/results/auth_overhead.json]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from bench.common import console, embedded_settings, print_table, summarize, write_json
from tempr.keyring import authenticate, create_key, load_pepper
from tempr.recall_api.main import create_app
from tempr.store.pool import create_pool
from tempr.streams.runtime import Supervisor

BANK = "bench-1"
CALLS: list[tuple[str, str, dict[str, Any] | None]] = [
    ("GET", f"/v1/banks/{BANK}/stats", None),
    ("GET", "/v1/banks", None),
    ("POST", f"/v1/banks/{BANK}/recall", {"query": "Where did Dana buy the bicycle?", "budget": "low"}),
    ("POST", f"/v1/banks/{BANK}/memories", {"items": [{"content": "Dana bought a red bicycle in Lisbon."}]}),
]


async def _measure(settings: Any, rounds: int) -> dict[str, Any]:
    open_app = create_app(settings.model_copy(update={"auth": "open"}))
    keys_app = create_app(
        settings.model_copy(
            update={"auth": "keys", "rate_limit_retain_per_min": 0, "rate_limit_recall_per_min": 0}
        )
    )
    pool = await create_pool(settings.database_url, max_size=2)
    pepper = load_pepper(settings)
    _, key = await create_key(
        pool,
        pepper,
        name=f"bench-{time.time_ns()}",
        scopes=["read", "write"],
        banks=["bench-*"],
        created_by="bench",
    )
    timings: dict[str, dict[str, list[float]]] = {f"{m} {p}": {"open": [], "keys": []} for m, p, _ in CALLS}
    async with (
        open_app.router.lifespan_context(open_app),
        keys_app.router.lifespan_context(keys_app),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=open_app), base_url="http://open") as open_client,
        httpx.AsyncClient(
            transport=httpx.ASGITransport(app=keys_app),
            base_url="http://keys",
            headers={"Authorization": f"Bearer {key}"},
        ) as keys_client,
    ):
        clients = {"open": open_client, "keys": keys_client}
        assert (await open_client.put(f"/v1/banks/{BANK}", json={"name": "Bench"})).status_code in (200, 201)
        for round_ in range(rounds + 5):  # the first 5 warm up
            order = ("open", "keys") if round_ % 2 == 0 else ("keys", "open")
            for method, path, body in CALLS:
                for mode in order:
                    started = time.perf_counter()
                    r = await clients[mode].request(method, path, json=body)
                    elapsed = (time.perf_counter() - started) * 1000
                    assert r.status_code < 300, (mode, path, r.status_code, r.text)
                    if round_ >= 5:
                        timings[f"{method} {path}"][mode].append(elapsed)
        check = []
        for _ in range(rounds):
            started = time.perf_counter()
            assert await authenticate(pool, key, pepper) is not None
            check.append((time.perf_counter() - started) * 1000)
    await pool.close()
    return {"routes": timings, "authenticate_ms": check}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tempr-bench-auth-") as tmp:
        supervisor = Supervisor(embedded_settings(Path(tmp)), say=lambda m: console.print(f"· {m}"))
        try:
            settings = supervisor.start_services()  # Postgres and the broker; no worker needed
            raw = asyncio.run(_measure(settings, args.rounds))
        finally:
            supervisor.stop()
    rows, out = [], {}
    for route, modes in raw["routes"].items():
        o, k = summarize(modes["open"]), summarize(modes["keys"])
        rows.append([route, o["median"], k["median"], k["median"] - o["median"], o["p95"], k["p95"]])
        out[route] = {"open": o, "keys": k, "median_added_ms": k["median"] - o["median"]}
    auth = summarize(raw["authenticate_ms"])
    rows.append(
        [
            "authenticate() alone (lookup + HMAC)",
            float("nan"),
            auth["median"],
            auth["median"],
            float("nan"),
            auth["p95"],
        ]
    )
    print_table(
        f"Access check overhead, ms ({args.rounds} interleaved rounds, in-process)",
        ["route", "open p50", "keys p50", "added p50", "open p95", "keys p95"],
        rows,
    )
    write_json(args.json, {"rounds": args.rounds, "routes": out, "authenticate_ms": auth})


if __name__ == "__main__":
    main()
