"""The lifecycle's edges against the live stack: a near-duplicate folded into a forgotten fact,
a token whose message was forgotten, corrections and tombstones of a copy imported under a new
id through a replay, and the audit rows of every forget and correction."""

from __future__ import annotations

import time
import uuid
from typing import Any

import httpx
import pytest

from tempr.schemas.ids import imported_id
from tempr.streams.runtime import Supervisor
from tests.conftest import wait_until
from tests.integration.test_bank_replay import conversation, facts, retain, settled
from tests.integration.test_bank_transfer import export, import_
from tests.integration.test_forget_correct import TRIP, recall_texts

pytestmark = pytest.mark.integration

PIXEL = ("Ines", "I adopted a grey cat called Pixel from the shelter in Braga.")


def _with(found: dict[str, dict[str, Any]], word: str) -> dict[str, dict[str, Any]]:
    return {i: f for i, f in found.items() if word in f["text"]}


def test_a_statement_folded_into_a_forgotten_fact_never_comes_back(api: httpx.Client, bank: str) -> None:
    # The same statement in two conversations, a few minutes apart: the second folds into the first.
    retain(api, bank, conversation("first", [PIXEL]))
    settled(api, bank)
    retain(api, bank, [{**conversation("second", [PIXEL])[0], "timestamp": "2024-04-01T09:05:00Z"}])
    settled(api, bank)
    pixel = _with(facts(api, bank), "Pixel")
    merged = {i: f for i, f in pixel.items() if set(f["source_message_ids"]) == {"first-0", "second-0"}}
    assert merged, f"the repeat was folded into the first statement: {pixel}"
    assert all(len(f["metadata"].get("merged_ids", [])) == 1 for f in merged.values())

    for fact_id in pixel:
        assert api.delete(f"/v1/banks/{bank}/memories/{fact_id}").status_code == 200
    assert not _with(facts(api, bank), "Pixel")

    # The journal still holds both messages; the folded statement's own id is tombstoned too.
    assert api.post(f"/v1/banks/{bank}/replay").status_code == 202
    settled(api, bank)
    assert not _with(facts(api, bank), "Pixel"), "a replay brought the folded statement back"


def test_a_token_whose_message_was_forgotten_is_reached(
    api: httpx.Client, stack: Supervisor, bank: str
) -> None:
    wait_s = stack.settings.max_consistency_wait_s
    # Forgotten before it is materialized (most likely still in flight), then after.
    for name, settle_first in (("early", False), ("late", True)):
        token = retain(api, bank, conversation(name, [PIXEL]))
        if settle_first:
            settled(api, bank)
        r = api.delete(f"/v1/banks/{bank}/messages/{name}-0")
        assert r.status_code == 200, r.text
        started = time.monotonic()
        r = api.post(
            f"/v1/banks/{bank}/recall",
            json={"query": "Where did Ines adopt her cat?", "after": token},
            timeout=wait_s + 30,
        )
        assert r.status_code == 200, (name, r.text)
        assert time.monotonic() - started < wait_s / 2, name
        assert not any("Braga" in x["text"] for x in r.json()["results"]), name
    settled(api, bank)
    assert not _with(facts(api, bank), "Pixel")


def test_a_copy_imported_under_a_new_id_keeps_corrections_and_tombstones_through_a_replay(
    api: httpx.Client, bank: str
) -> None:
    retain(api, bank, conversation("run", TRIP))
    settled(api, bank)
    found = facts(api, bank)
    target = next(i for i, f in found.items() if f["source_message_ids"] == ["run-3"])
    doomed = next(i for i, f in found.items() if f["source_message_ids"] == ["run-2"])
    corrected = "Omar is training for the Porto marathon in November."
    r = api.patch(f"/v1/banks/{bank}/memories/{target}", json={"text": corrected, "reason": "typo"})
    assert r.status_code == 202, r.text
    recall_texts(api, bank, "marathon", after=r.json()["consistency"]["token"])
    assert api.delete(f"/v1/banks/{bank}/memories/{doomed}").status_code == 200
    settled(api, bank)

    copy = f"copy-{uuid.uuid4().hex[:10]}"
    import_(api, copy, export(api, bank))
    twin, gone = str(imported_id(copy, target)), str(imported_id(copy, doomed))
    imported = facts(api, copy)
    assert imported[twin]["text"] == corrected and gone not in imported

    assert api.post(f"/v1/banks/{copy}/replay").status_code == 202
    settled(api, copy)
    replayed = facts(api, copy)
    # The copy's extractor derives the ids the import wrote: the same facts, the correction
    # re-applied, the forgotten one still forgotten.
    assert set(replayed) == set(imported)
    again = api.get(f"/v1/banks/{copy}/memories/{twin}").json()
    assert again["text"] == corrected
    assert [h["reason"] for h in again["history"]] == ["typo"]
    assert gone not in replayed


def test_every_forget_and_correction_leaves_an_audit_row(api: httpx.Client, bank: str) -> None:
    retain(api, bank, [*conversation("pets", TRIP[:2]), *conversation("run", TRIP[3:], day=2)])
    settled(api, bank)
    fact_id = next(i for i, f in facts(api, bank).items() if f["source_message_ids"] == ["run-0"])
    assert api.patch(f"/v1/banks/{bank}/memories/{fact_id}", json={"text": "Omar runs."}).status_code == 202
    assert api.delete(f"/v1/banks/{bank}/memories/{fact_id}").status_code == 200
    assert api.delete(f"/v1/banks/{bank}/messages/pets-1").status_code == 200
    assert api.delete(f"/v1/banks/{bank}/conversations/pets").status_code == 200
    assert api.delete(f"/v1/banks/{bank}/messages/never-was").status_code == 404

    def rows() -> list[dict[str, Any]]:
        return api.get("/v1/audit", params={"bank_id": bank}).json()["items"]

    wait_until(lambda: len(rows()) >= 5, timeout=30)
    seen = [(r["action"], r["status"], r["detail"]) for r in reversed(rows())]
    memory = "/v1/banks/{bank_id}/memories/{memory_id}"
    assert seen == [
        (f"PATCH {memory}", 202, {"memory_id": fact_id}),
        (f"DELETE {memory}", 200, {"memory_id": fact_id}),
        ("DELETE /v1/banks/{bank_id}/messages/{message_id}", 200, {"message_id": "pets-1"}),
        ("DELETE /v1/banks/{bank_id}/conversations/{conversation_id}", 200, {"conversation_id": "pets"}),
        ("DELETE /v1/banks/{bank_id}/messages/{message_id}", 404, {"message_id": "never-was"}),
    ]
    assert all(r["bank_id"] == bank and r["actor"] for r in rows())


def test_a_null_text_or_tags_is_refused_naming_the_field(api: httpx.Client, bank: str) -> None:
    retain(api, bank, conversation("run", TRIP[3:]))
    settled(api, bank)
    fact_id = next(iter(facts(api, bank)))
    for name in ("text", "tags"):
        r = api.patch(f"/v1/banks/{bank}/memories/{fact_id}", json={name: None})
        assert r.status_code == 422 and f"{name} may not be null" in r.text, r.text
