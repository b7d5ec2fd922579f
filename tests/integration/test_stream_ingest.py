"""A live stream gives the same memory as a batch: one LoCoMo session sent turn by turn, each
turn alone with a gap longer than the segmenter's idle flush, against the same session sent
at once."""

from __future__ import annotations

import time
from itertools import pairwise

import httpx
import pytest

from tempr.conversations import read_conversations
from tempr.schemas.ids import stable_id
from tempr.streams.runtime import Supervisor
from tests.conftest import SHARED, wait_until

pytestmark = pytest.mark.integration

CONV = SHARED / "data" / "locomo" / "conv-26.json"


def _items() -> list[dict]:
    if not CONV.exists():
        pytest.skip(f"LoCoMo data not found at {CONV}")
    session = read_conversations(CONV)[0]  # session 1: Caroline and Melanie, 18 turns
    return [item.model_dump(mode="json", exclude_defaults=True) for item in session.items]


def _retain(api: httpx.Client, bank: str, items: list[dict]) -> None:
    r = api.post(f"/v1/banks/{bank}/memories", json={"items": items})
    assert r.status_code == 202, r.text


def _settled(api: httpx.Client, bank: str, turns: int) -> bool:
    stats = api.get(f"/v1/banks/{bank}/stats").json()
    return stats.get("messages") == turns and stats.get("pending_events") == 0


def _facts(api: httpx.Client, bank: str) -> list[dict]:
    return api.get(f"/v1/banks/{bank}/memories", params={"limit": 1000}).json()["items"]


def _as_bank(ids: dict[str, str], facts: list[dict]) -> set[tuple[str, str, tuple[str, ...]]]:
    return {(ids.get(f["id"], f["id"]), f["text"], tuple(f["source_message_ids"])) for f in facts}


def test_a_session_streamed_turn_by_turn_gives_the_batch_facts(
    api: httpx.Client, stack: Supervisor, bank: str
) -> None:
    items = _items()
    batch_bank, stream_bank = f"{bank}-batch", f"{bank}-stream"
    _retain(api, batch_bank, items)
    gap = stack.settings.chunk_idle_s * 2  # longer than the idle flush (and its timer)
    for item in items:
        _retain(api, stream_bank, [item])
        time.sleep(gap)
    for b in (batch_bank, stream_bank):
        wait_until(lambda b=b: _settled(api, b, len(items)), timeout=120)

    batch, stream = _facts(api, batch_bank), _facts(api, stream_bank)
    # Fact ids hash the bank: the batch bank's ids, recomputed for the stream bank's.
    turns = [i["message_id"] for i in items]
    ids = {
        str(stable_id(batch_bank, "fact", m, i)): str(stable_id(stream_bank, "fact", m, i))
        for m in turns
        for i in range(40)
    }
    ids |= {
        str(stable_id(batch_bank, "exchange", a, b)): str(stable_id(stream_bank, "exchange", a, b))
        for a, b in pairwise(turns)
    }
    assert _as_bank(ids, stream) == _as_bank(ids, batch)
    # Replies met the turns they answer although each came in a chunk of its own.
    exchanges = [f for f in stream if len(f["source_message_ids"]) >= 2]
    assert len(exchanges) >= len(items) // 2
    assert len({f["chunk_id"] for f in stream}) >= len(items) // 2 > len({f["chunk_id"] for f in batch})
