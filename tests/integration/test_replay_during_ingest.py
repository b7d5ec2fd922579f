"""R5: replays of a bank while the worker materializes the same bank never fail (they used to
deadlock with the worker's writes and answer 500); the bank ends complete."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from tests.conftest import wait_until

pytestmark = pytest.mark.integration


def _turns(round_: int) -> list[dict]:
    return [
        {
            "content": f"Round {round_}: Mira repaired bicycle number {i} and sold it to Tomas for {10 + i} euros.",
            "speaker": "Mira" if i % 2 else "Tomas",
            "conversation_id": f"c{round_ % 3}",
            "message_id": f"r{round_}-{i}",
            "timestamp": "2024-02-01T10:00:00Z",
        }
        for i in range(12)
    ]


def test_replays_racing_the_worker_never_fail(api: httpx.Client, bank: str) -> None:
    assert api.post(f"/v1/banks/{bank}/memories", json={"items": _turns(0)}).status_code == 202
    statuses: list[int] = []
    with ThreadPoolExecutor(max_workers=2) as pool:
        for round_ in range(1, 7):
            retain = pool.submit(api.post, f"/v1/banks/{bank}/memories", json={"items": _turns(round_)})
            replay = pool.submit(api.post, f"/v1/banks/{bank}/replay", json={})
            statuses += [retain.result().status_code, replay.result().status_code]
    assert statuses == [202] * len(statuses), statuses

    def settled() -> bool:
        return api.get(f"/v1/banks/{bank}/stats").json()["pending_events"] == 0

    wait_until(settled, timeout=180)
    facts = api.get(f"/v1/banks/{bank}/memories", params={"limit": 1000}).json()["items"]
    cited = {mid for f in facts for mid in f["source_message_ids"]}
    assert {f"r{r}-{i}" for r in range(7) for i in range(12)} <= cited
    assert api.get("/health").json()["status"] == "ok"
