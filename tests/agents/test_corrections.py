"""A corrected fact is built like a new one: new text, dates, tags and entities, no stale vector."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from tempr.agents.extraction.corrections import corrected, correction_event, keep_corrections
from tempr.schemas.events import EntityMention, ExtractedFact
from tempr.store.corrections import Correction

WHEN = datetime(2024, 5, 1, tzinfo=UTC)


def _correction(unit_id: uuid.UUID, text: str) -> Correction:
    return Correction(
        id=uuid.uuid4(), seq=1, bank_id="b", unit_id=unit_id, text=text,
        occurred_start=WHEN, occurred_end=None, tags=["fixed"], reason="typo",
    )  # fmt: skip


def test_a_correction_replaces_text_dates_tags_and_entities() -> None:
    fact = ExtractedFact(
        fact_id=uuid.uuid4(),
        text="Omar ran the Lisbon marathon.",
        entities=[EntityMention(name="Lisbon", kind="location")],
        metadata={"speaker": "Omar"},
        embedding=[0.1, 0.2],
    )
    fix = _correction(fact.fact_id, "Omar ran the Porto marathon.")
    out = corrected(fact, fix)
    assert out.fact_id == fact.fact_id and out.text == "Omar ran the Porto marathon."
    assert out.occurred_start == WHEN and out.tags == ["fixed"]
    names = {e.name for e in out.entities}
    assert "Porto" in names and "Lisbon" not in names
    assert out.embedding is None, "the extractor embeds the new text"
    assert out.metadata == {"speaker": "Omar", "corrected_by": str(fix.id)}


def test_only_corrected_facts_change_on_a_replay() -> None:
    a, b = (ExtractedFact(fact_id=uuid.uuid4(), text=t) for t in ("First.", "Second."))
    kept = {b.fact_id: _correction(b.fact_id, "Second, corrected.")}
    assert [f.text for f in keep_corrections([a, b], kept)] == ["First.", "Second, corrected."]


def test_the_correction_event_keeps_the_facts_provenance() -> None:
    unit_id, chunk_id = uuid.uuid4(), uuid.uuid4()
    unit = {
        "id": unit_id, "fact_type": "experience", "mentioned_at": WHEN, "confidence": None,
        "source_message_ids": ["m1", "m2"], "context": None, "document_id": None,
        "conversation_id": "c1", "metadata": {"speaker": "Ines"}, "evidence_ids": [], "chunk_id": chunk_id,
    }  # fmt: skip
    fix = _correction(unit_id, "Ines hiked alone.")
    event = correction_event(fix, unit)
    assert event.correction_id == fix.id and event.chunk_id == chunk_id and event.message_event_ids == []
    (fact,) = event.facts
    assert (
        fact.fact_id == unit_id and fact.source_message_ids == ["m1", "m2"] and fact.fact_type == "experience"
    )
