"""Fact ids of a bank imported under another id: derived by the first ancestor, mapped along."""

from __future__ import annotations

from datetime import UTC, datetime

from tempr.agents.extraction.lineage import along_lineage, in_bank
from tempr.agents.extraction.local import extract_local
from tempr.schemas.events import ChunkEvent, MessageEvent
from tempr.schemas.ids import imported_id, stable_id


def _chunk(bank: str) -> ChunkEvent:
    message = MessageEvent(
        bank_id=bank,
        event_id=stable_id("event", 1),
        message_id="m-1",
        content="Ines adopted a grey cat called Pixel in Braga.",
        speaker="Ines",
        conversation_id="c",
        timestamp=datetime(2024, 4, 1, tzinfo=UTC),
        received_at=datetime(2024, 4, 1, tzinfo=UTC),
    )
    return ChunkEvent(bank_id=bank, chunk_id=stable_id("chunk", 1), conversation_id="c", messages=[message])


def test_a_copy_of_a_copy_derives_the_ids_both_imports_wrote() -> None:
    original = extract_local(_chunk("a"))
    # b imported from a, then c from b: each import mapped every id with imported_id.
    written = {imported_id("c", imported_id("b", f.fact_id)) for f in original}
    seen = in_bank(_chunk("c"), "a")
    assert seen.bank_id == "a" and all(m.bank_id == "a" for m in seen.messages)
    assert {f.fact_id for f in along_lineage(extract_local(seen), ["a", "b"], "c")} == written


def test_a_bank_without_lineage_keeps_its_own_ids() -> None:
    chunk = _chunk("a")
    facts = extract_local(chunk)
    assert in_bank(chunk, "a") is chunk
    assert along_lineage(facts, [], "a") == facts
    assert {f.fact_id for f in facts}.isdisjoint(f.fact_id for f in extract_local(_chunk("c")))
