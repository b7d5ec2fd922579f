"""No statement is merged away: near-duplicates fold only when the texts say the same thing."""

from __future__ import annotations

import httpx
import pytest

from tests.conftest import wait_until

pytestmark = pytest.mark.integration


def _texts(api: httpx.Client, bank: str) -> list[str]:
    return [f["text"] for f in api.get(f"/v1/banks/{bank}/memories", params={"limit": 1000}).json()["items"]]


def _settled(api: httpx.Client, bank: str) -> bool:
    return api.get(f"/v1/banks/{bank}/stats").json()["pending_events"] == 0


def _retain(api: httpx.Client, bank: str, contents: list[str], ids: list[str]) -> None:
    items = [
        {"content": c, "message_id": i, "timestamp": "2024-06-03T10:00:00Z"}
        for c, i in zip(contents, ids, strict=True)
    ]
    assert api.post(f"/v1/banks/{bank}/memories", json={"items": items}).status_code == 202
    wait_until(lambda: _settled(api, bank), timeout=90)


def test_a_different_amount_is_a_different_fact(api: httpx.Client, bank: str) -> None:
    _retain(api, bank, ["Ivo paid 120 euros for the new tyres."], ["m1"])
    _retain(api, bank, ["Ivo paid 450 euros for the new tyres."], ["m2"])
    texts = _texts(api, bank)
    assert any("120" in t for t in texts) and any("450" in t for t in texts), texts
    # An exact repeat from another message still folds into the stored fact, citing both.
    _retain(api, bank, ["Ivo paid 120 euros for the new tyres."], ["m3"])
    facts = api.get(f"/v1/banks/{bank}/memories").json()["items"]
    assert len(facts) == 2
    (first,) = [f for f in facts if "120" in f["text"]]
    assert sorted(first["source_message_ids"]) == ["m1", "m3"]


def test_n_counts_keep_n_facts(api: httpx.Client, bank: str) -> None:
    n = 15
    _retain(
        api,
        bank,
        [f"Alice bought {i} apples at the market on Monday." for i in range(1, n + 1)],
        [f"a{i}" for i in range(1, n + 1)],
    )
    assert len(_texts(api, bank)) == n
