"""Export → import against live stacks: the same rows and the same recalls on another tempr
(another data directory), idempotent, resumable, and tombstones win over an old export.

The bank is the first four sessions of LoCoMo conv-26 (76 turns): the whole conversation
(419 turns) takes minutes to ingest on the CI's two cores and adds no path this one misses.
`TRANSFER_SESSIONS=all` runs it on the whole conversation.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest

from tempr.conversations import locomo_conversations
from tempr.streams.runtime import Supervisor
from tests.conftest import SHARED, make_settings, running_stack
from tests.integration.test_bank_replay import facts, retain, settled

pytestmark = pytest.mark.integration

SESSIONS = (
    None if os.environ.get("TRANSFER_SESSIONS") == "all" else int(os.environ.get("TRANSFER_SESSIONS", "4"))
)
QUERIES = [
    "When did Caroline go to the LGBTQ support group?",
    "What did Melanie paint?",
    "What is Caroline's identity?",
    "What activities does Melanie do with her family?",
    "What career is Caroline interested in?",
]

# Every table of a bank the export carries, and the columns that say what the bank knows:
# journal bookkeeping of the broker (seq, publish counts, attempts) belongs to each cluster.
TABLES = {
    "banks": "SELECT id, name, background, disposition, config, created_at, updated_at, id_lineage"
    " FROM banks WHERE id = $1",
    "messages": "SELECT id, message_id, conversation_id, document_id, payload, received_at, processed_at"
    " FROM messages WHERE bank_id = $1",
    "documents": "SELECT id, content_hash, metadata, created_at, updated_at FROM documents WHERE bank_id = $1",
    "chunks": "SELECT id, conversation_id, document_id, text, message_ids, created_at FROM chunks WHERE bank_id = $1",
    "memory_units": "SELECT id, text, embedding::text, search::text, fact_type, occurred_start, occurred_end,"
    " mentioned_at, confidence, proof_count, tags, metadata, context, conversation_id, document_id, chunk_id,"
    " source_message_ids, evidence_ids, created_at, updated_at FROM memory_units WHERE bank_id = $1",
    "entities": "SELECT id, canonical_name, kind, aliases, mention_count, first_seen, last_seen"
    " FROM entities WHERE bank_id = $1",
    "unit_entities": "SELECT unit_id, entity_id FROM unit_entities WHERE bank_id = $1",
    "memory_links": "SELECT from_id, to_id, link_type, weight FROM memory_links WHERE bank_id = $1",
    "opinion_history": "SELECT * FROM opinion_history WHERE bank_id = $1",
    "fact_corrections": "SELECT id, unit_id, text, occurred_start, occurred_end, tags, reason, created_at, applied_at"
    " FROM fact_corrections WHERE bank_id = $1",
    "fact_history": "SELECT * FROM fact_history WHERE bank_id = $1",
    "forgotten_messages": "SELECT bank_id, message_id, conversation_id, forgotten_at, reason"
    " FROM forgotten_messages WHERE bank_id = $1",
    "forgotten_facts": "SELECT * FROM forgotten_facts WHERE bank_id = $1",
}


def snapshot(dsn: str, bank: str) -> dict[str, list[str]]:
    async def read() -> dict[str, list[str]]:
        conn = await asyncpg.connect(dsn)
        try:
            return {
                table: sorted(
                    json.dumps(dict(r), default=str, sort_keys=True) for r in await conn.fetch(sql, bank)
                )
                for table, sql in TABLES.items()
            }
        finally:
            await conn.close()

    return asyncio.run(read())


def recalls(api: httpx.Client, bank: str) -> list[list[tuple[str, str]]]:
    out = []
    for query in QUERIES:
        r = api.post(
            f"/v1/banks/{bank}/recall",
            json={
                "query": query,
                "budget": "mid",
                "max_tokens": 1024,
                "query_timestamp": "2023-09-01T00:00:00Z",
            },
        )
        assert r.status_code == 200, r.text
        out.append([(x["id"], x["text"]) for x in r.json()["results"]])
    return out


def export(api: httpx.Client, bank: str) -> bytes:
    with api.stream("GET", f"/v1/banks/{bank}/export") as r:
        assert r.status_code == 200 and r.headers["content-type"].startswith("application/x-ndjson")
        return b"".join(r.iter_bytes())


def import_(api: httpx.Client, bank: str, body: bytes) -> dict[str, Any]:
    r = api.post(
        f"/v1/banks/{bank}/import",
        content=body,
        headers={"content-type": "application/x-ndjson"},
        timeout=300,
    )
    assert r.status_code == 200, r.text
    return r.json()


@pytest.fixture(scope="module")
def conv26(api: httpx.Client) -> str:
    """conv-26's first sessions, one message forgotten and one fact corrected."""
    bank = "transfer-conv26"
    data = json.loads((SHARED / "data" / "locomo" / "conv-26.json").read_text())
    conversations = list(locomo_conversations(data, name="conv-26"))[:SESSIONS]
    retain(api, bank, [i.model_dump(mode="json", exclude_none=True) for c in conversations for i in c.items])
    settled(api, bank, timeout=600)
    assert api.delete(f"/v1/banks/{bank}/messages/D1:5").status_code == 200
    target = next(i for i, f in facts(api, bank).items() if "painting" in f["text"].lower())
    r = api.patch(
        f"/v1/banks/{bank}/memories/{target}", json={"text": "Melanie painted a sunrise over a lake."}
    )
    assert r.status_code == 202
    recalls(api, bank)  # warm
    api.post(f"/v1/banks/{bank}/recall", json={"query": "x", "after": r.json()["consistency"]["token"]})
    settled(api, bank)
    return bank


def test_export_is_a_versioned_stream_with_every_kind(api: httpx.Client, conv26: str) -> None:
    lines = [json.loads(line) for line in export(api, conv26).splitlines()]
    header, end = lines[0], lines[-1]
    assert header["record"] == "header" and header["format"] == "tempr.bank-export" and header["version"] == 1
    assert header["embedding_dimension"] == 384 and header["embedding_model"]
    assert end["record"] == "end"
    kinds = {line["record"] for line in lines}
    assert {"bank", "message", "chunk", "fact", "entity", "unit_entity", "link", "correction"} <= kinds
    assert {"fact_history", "forgotten_message"} <= kinds
    assert end["counts"]["fact"] == sum(1 for line in lines if line["record"] == "fact")
    assert all(len(line["embedding"]) == 384 for line in lines if line["record"] == "fact")


def test_import_into_another_tempr_gives_the_same_bank_and_recalls(
    api: httpx.Client, stack: Supervisor, conv26: str, tmp_path: Path
) -> None:
    body = export(api, conv26)
    source_rows, source_recalls = snapshot(stack.settings.database_url or "", conv26), recalls(api, conv26)
    with running_stack(make_settings(tmp_path / "other")) as other:
        s = other.settings
        with httpx.Client(base_url=f"http://{s.host}:{s.port}", timeout=60) as copy:
            # Cut halfway: what arrived is kept, and the complete run finishes the job.
            lines = body.splitlines(keepends=True)
            half = import_(copy, conv26, b"".join(lines[: len(lines) // 2]))
            assert half["complete"] is False
            full = import_(copy, conv26, body)
            assert full["complete"] is True and full["source_bank_id"] == conv26
            assert sum(full["written"].values()) + sum(half["written"].values()) == sum(
                v for k, v in full["records"].items() if k not in ("header", "end")
            )
            again = import_(copy, conv26, body)
            assert sum(again["written"].values()) == 0, "importing twice changes nothing"

            copied = snapshot(s.database_url or "", conv26)
            for table, rows in source_rows.items():
                assert copied[table] == rows, table
            assert copy.get(f"/v1/banks/{conv26}/stats").json()["pending_events"] == 0
            assert recalls(copy, conv26) == source_recalls


def test_an_old_export_does_not_bring_back_what_was_forgotten_since(api: httpx.Client, conv26: str) -> None:
    before = export(api, conv26)
    gone = next(i for i, f in facts(api, conv26).items() if "D1:7" in f["source_message_ids"])
    assert api.delete(f"/v1/banks/{conv26}/messages/D1:7").status_code == 200
    settled(api, conv26)  # the turns that shared a fact with it are rebuilt
    assert gone not in facts(api, conv26)
    result = import_(api, conv26, before)
    assert result["complete"] is True
    after = facts(api, conv26)
    assert gone not in after and not any("D1:7" in f["source_message_ids"] for f in after.values())


def test_import_under_a_new_id_is_a_copy_beside_the_original(
    api: httpx.Client, conv26: str, bank: str
) -> None:
    settled(api, conv26)
    body = export(api, conv26)
    first = import_(api, bank, body)
    assert first["bank_id"] == bank and first["written"]["fact"] == first["records"]["fact"]
    assert sum(import_(api, bank, body)["written"].values()) == 0
    original, copy = facts(api, conv26), facts(api, bank)
    assert sorted(f["text"] for f in copy.values()) == sorted(f["text"] for f in original.values())
    assert not set(copy) & set(original), "ids mapped into the new bank"
    assert [[t for _, t in r] for r in recalls(api, bank)] == [
        [t for _, t in r] for r in recalls(api, conv26)
    ]


def test_imports_refuse_what_is_not_an_export(api: httpx.Client, bank: str) -> None:
    r = api.post(f"/v1/banks/{bank}/import", content=b'{"record": "fact"}\n')
    assert r.status_code == 400 and "header" in r.json()["detail"]
    newer = {"record": "header", "format": "tempr.bank-export", "version": 99, "bank_id": bank,
             "exported_at": "2026-01-01T00:00:00Z", "tempr_version": "9", "embedding_model": "m",
             "embedding_dimension": 384}  # fmt: skip
    r = api.post(f"/v1/banks/{bank}/import", content=json.dumps(newer).encode())
    assert r.status_code == 400 and "newer" in r.json()["detail"]
    assert api.get(f"/v1/banks/{bank}/export").status_code == 404
