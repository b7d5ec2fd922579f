"""A corrected fact, built like a new one: its own entity mentions from the new text.

Used for a `FactCorrection` (the fact as corrected) and on a replay, where a re-extracted
fact takes the latest correction it had, so a replay keeps what a user corrected.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from uuid import UUID

from tempr.agents.extraction.entities import find_entities
from tempr.schemas.events import ExtractedFact, FactsEvent
from tempr.schemas.ids import stable_id
from tempr.store.corrections import Correction

__all__ = ["corrected", "correction_event", "keep_corrections"]


def corrected(fact: ExtractedFact, correction: Correction) -> ExtractedFact:
    """The fact with the correction's text, dates and tags; entities found again, embedding
    left for the extractor to compute on the new text."""
    speaker = fact.metadata.get("speaker")
    return fact.model_copy(
        update={
            "text": correction.text,
            "occurred_start": correction.occurred_start,
            "occurred_end": correction.occurred_end,
            "tags": list(correction.tags),
            "entities": find_entities(correction.text, known_speakers=[speaker] if speaker else []),
            "metadata": {**fact.metadata, "corrected_by": str(correction.id)},
            "embedding": None,
        }
    )


def keep_corrections(facts: Sequence[ExtractedFact], kept: Mapping[UUID, Correction]) -> list[ExtractedFact]:
    return [corrected(f, kept[f.fact_id]) if f.fact_id in kept else f for f in facts]


def correction_event(correction: Correction, unit: Mapping[str, Any]) -> FactsEvent:
    """The one-fact event that carries a correction on to the resolver and the materializer."""
    stored = ExtractedFact(
        fact_id=unit["id"],
        text=correction.text,
        fact_type=unit["fact_type"],
        mentioned_at=unit["mentioned_at"],
        confidence=unit["confidence"],
        source_message_ids=list(unit["source_message_ids"]),
        context=unit["context"],
        document_id=unit["document_id"],
        conversation_id=unit["conversation_id"],
        metadata=dict(unit["metadata"]),
        evidence_ids=list(unit["evidence_ids"]),
    )
    return FactsEvent(
        bank_id=correction.bank_id,
        chunk_id=unit["chunk_id"] or stable_id(correction.bank_id, "correction", correction.id),
        conversation_id=unit["conversation_id"],
        document_id=unit["document_id"],
        message_event_ids=[],
        facts=[corrected(stored, correction)],
        correction_id=correction.id,
    )
