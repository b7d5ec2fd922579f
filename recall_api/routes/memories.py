"""Retain (accept messages into the pipeline) and list stored memories."""

from __future__ import annotations

from datetime import UTC, datetime

from fastapi import APIRouter, Query, status

from recall_api.deps import BankIdPath, PoolDep, PublisherDep
from schemas.api import (
    ConsistencyToken,
    Memory,
    MemoryPage,
    RetainItem,
    RetainRequest,
    RetainResponse,
)
from schemas.events import MessageEvent
from schemas.ids import content_hash, stable_id
from store import memories
from streams.topics import MESSAGES

__all__ = ["router", "to_message_event"]

router = APIRouter(prefix="/v1/banks/{bank_id}", tags=["memories"])


def to_message_event(bank_id: str, item: RetainItem, received_at: datetime) -> MessageEvent:
    """Ids derive from the source id, or from the content: a resent item is the same event."""
    message_id = (
        item.message_id
        or "h"
        + content_hash(item.conversation_id, item.document_id, item.timestamp, item.speaker, item.content)[
            :32
        ]
    )
    return MessageEvent(
        event_id=stable_id(bank_id, "message", message_id),
        bank_id=bank_id,
        message_id=message_id,
        content=item.content,
        speaker=item.speaker,
        timestamp=item.timestamp or received_at,
        conversation_id=item.conversation_id,
        context=item.context,
        document_id=item.document_id,
        tags=item.tags,
        metadata=item.metadata,
        received_at=received_at,
    )


@router.post(
    "/memories",
    status_code=status.HTTP_202_ACCEPTED,
    response_model=RetainResponse,
    summary="Retain: accept conversation turns or notes into the memory pipeline",
)
async def retain(bank_id: BankIdPath, body: RetainRequest, publisher: PublisherDep) -> RetainResponse:
    received_at = datetime.now(UTC)
    events = [to_message_event(bank_id, item, received_at) for item in body.items]
    placed = await publisher.accept(events)
    partitions: dict[int, int] = {}
    for p in placed:
        if p.partition is not None and p.offset is not None:
            partitions[p.partition] = max(p.offset, partitions.get(p.partition, -1))
    seq = max(p.journal_seq for p in placed)
    return RetainResponse(
        bank_id=bank_id,
        accepted=len(events),
        event_ids=[e.event_id for e in events],
        consistency=ConsistencyToken(
            token=ConsistencyToken.encode(seq), journal_seq=seq, topic=MESSAGES.name, partitions=partitions
        ),
    )


@router.get("/memories", response_model=MemoryPage, summary="Page through stored facts")
async def list_memories(
    bank_id: BankIdPath,
    pool: PoolDep,
    limit: int = Query(100, ge=1, le=1000),
    offset: int = Query(0, ge=0),
    fact_type: str | None = Query(None, pattern="^(world|experience|opinion|observation)$"),
) -> MemoryPage:
    rows = await memories.list_units(pool, bank_id, limit=limit, offset=offset, fact_type=fact_type)
    total = await memories.count_units(pool, bank_id)
    return MemoryPage(
        bank_id=bank_id,
        total=total,
        limit=limit,
        offset=offset,
        items=[Memory.model_validate(dict(r)) for r in rows],
    )
