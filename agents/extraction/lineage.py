"""Fact ids in a bank imported under another id: derived as its first ancestor derives them,
then mapped along the chain of imports as each import mapped them.

So a replay of an imported copy rebuilds the very ids the import wrote, and the corrections,
tombstones and merges recorded against those ids keep holding. Only ids change: the texts
are extracted from the copy's own messages.
"""

from __future__ import annotations

from collections.abc import Sequence

from tempr.schemas.events import ChunkEvent, ExtractedFact, MessageEvent
from tempr.schemas.ids import lineage_id

__all__ = ["along_lineage", "in_bank", "messages_in_bank"]


def in_bank(chunk: ChunkEvent, bank_id: str) -> ChunkEvent:
    """The chunk as seen from `bank_id`, the bank whose name the extractor derives ids from."""
    if chunk.bank_id == bank_id:
        return chunk
    return chunk.model_copy(
        update={"bank_id": bank_id, "messages": messages_in_bank(chunk.messages, bank_id)}
    )


def messages_in_bank(messages: Sequence[MessageEvent], bank_id: str) -> list[MessageEvent]:
    return [m if m.bank_id == bank_id else m.model_copy(update={"bank_id": bank_id}) for m in messages]


def along_lineage(facts: list[ExtractedFact], lineage: list[str], bank_id: str) -> list[ExtractedFact]:
    """Facts extracted under `lineage[0]`, with their ids as `bank_id` holds them."""
    if not lineage:
        return facts
    return [f.model_copy(update={"fact_id": lineage_id(f.fact_id, lineage, bank_id)}) for f in facts]
