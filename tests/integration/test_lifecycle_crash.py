"""A worker killed midway through corrections and a forget: the pipeline ends consistent.

The session stack's worker is killed with SIGKILL while corrections are in flight, a message
is forgotten while it is down, and it is restarted as `tempr up` restarts it. Every correction
is applied exactly once (one history row each, the last one wins), nothing forgotten is back,
every message is materialized."""

from __future__ import annotations

import signal

import httpx
import pytest

from tempr.streams.runtime import Supervisor
from tests.conftest import wait_until
from tests.integration.test_bank_replay import HIKE, conversation, facts, retain, settled

pytestmark = pytest.mark.integration


def test_a_worker_killed_midway_ends_consistent(api: httpx.Client, stack: Supervisor, bank: str) -> None:
    retain(api, bank, conversation("hike", HIKE))
    settled(api, bank)
    target = next(i for i, f in facts(api, bank).items() if f["source_message_ids"] == ["hike-0"])
    tokens = []
    for n in range(12):
        r = api.patch(
            f"/v1/banks/{bank}/memories/{target}", json={"text": f"Ines hiked {n + 1} trails in April."}
        )
        assert r.status_code == 202, r.text
        tokens.append(r.json()["consistency"]["token"])
    worker = next(c for c in stack.children if c.name == "worker")
    assert worker.proc is not None
    worker.proc.send_signal(signal.SIGKILL)
    worker.proc.wait(10)

    # While it is down: a message forgotten, more turns accepted.
    r = api.delete(f"/v1/banks/{bank}/messages/hike-3")
    assert r.status_code == 200, r.text
    retain(api, bank, conversation("later", HIKE[:2], day=9))

    stack.check_children()  # what `tempr up` does when a child dies
    wait_until(lambda: worker.proc is not None and worker.proc.poll() is None, timeout=30)
    body = {"query": "trails", "after": tokens[-1]}
    # Each wait is bounded by the server (504 past it); the restarted worker takes longer.
    wait_until(
        lambda: api.post(f"/v1/banks/{bank}/recall", json=body, timeout=60).status_code == 200, timeout=300
    )
    settled(api, bank, timeout=240)

    detail = api.get(f"/v1/banks/{bank}/memories/{target}").json()
    assert detail["text"] == "Ines hiked 12 trails in April."
    assert [h["text"] for h in detail["history"]][1:] == [
        f"Ines hiked {n} trails in April." for n in range(1, 12)
    ]
    after = facts(api, bank)
    assert not any("hike-3" in f["source_message_ids"] for f in after.values())
    assert any("later-1" in f["source_message_ids"] for f in after.values())
    texts = [f["text"] for f in after.values()]
    assert len(texts) == len(set(texts)), "nothing doubled"
    assert api.get(f"/v1/banks/{bank}/stats").json()["pending_events"] == 0
