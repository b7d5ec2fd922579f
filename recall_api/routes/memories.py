"""Retain (accept messages into the pipeline) and list stored memories."""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, datetime

import asyncpg
from fastapi import APIRouter, Query, status

from tempr.errors import Conflict
from tempr.recall_api.deps import BankIdPath, OffsetQuery, PoolDep, PublisherDep
from tempr.schemas.api import (
    ConsistencyToken,
    ErrorBody,
    Memory,
    MemoryPage,
    RetainItem,
    RetainRequest,
    RetainResponse,
)
from tempr.schemas.ids import content_hash
from tempr.schemas.retain import to_message_event
from tempr.store import bank_locks, banks, documents, forget, memories
from tempr.streams.topics import MESSAGES

__all__ = ["router", "to_message_event"]

router = APIRouter(prefix="/v1/banks/{bank_id}", tags=["memories"])


@router.post(
    "/memories",
    status_code=status.HTTP_202_ACCEPTED,
    response_model=RetainResponse,
    responses={
        409: {"model": ErrorBody, "description": "A message of the request was forgotten (tombstoned)"}
    },
    summary="Retain: accept conversation turns or notes into the memory pipeline",
)
async def retain(bank_id: BankIdPath, body: RetainRequest, publisher: PublisherDep) -> RetainResponse:
    received_at = datetime.now(UTC)
    every = [to_message_event(bank_id, item, received_at) for item in body.items]
    await _refuse_forgotten(publisher.pool, bank_id, [e.message_id for e in every])
    unchanged = await _apply_document_versions(publisher.pool, bank_id, body.items)
    events = [e for e in every if e.document_id not in unchanged]
    if not events:
        return RetainResponse(
            bank_id=bank_id,
            accepted=0,
            event_ids=[],
            unchanged_documents=sorted(unchanged),
            consistency=ConsistencyToken(
                token=ConsistencyToken.encode(0), journal_seq=0, topic=MESSAGES.name, partitions={}
            ),
        )
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
        unchanged_documents=sorted(unchanged),
        consistency=ConsistencyToken(
            token=ConsistencyToken.encode(seq), journal_seq=seq, topic=MESSAGES.name, partitions=partitions
        ),
    )


async def _refuse_forgotten(pool: asyncpg.Pool, bank_id: str, message_ids: list[str]) -> None:
    """A forgotten message stays forgotten: sending it again is a 409 naming its tombstone."""
    found = await forget.forgotten_messages_among(pool, bank_id, message_ids)
    if found:
        message_id, at = min(found.items())
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        raise Conflict(
            f"message {message_id!r}{more} of bank {bank_id} was forgotten at {at.isoformat()} "
            "(tombstone): it cannot be stored again; send it under a new message_id"
        )


async def _apply_document_versions(pool: asyncpg.Pool, bank_id: str, items: list[RetainItem]) -> set[str]:
    """Same content hash as stored → nothing to redo; changed → the old version's facts go.

    Returns the documents left unchanged."""
    contents: dict[str, list[str]] = defaultdict(list)
    for item in items:
        if item.document_id is not None:
            contents[item.document_id].append(item.content)
    unchanged: set[str] = set()
    if not contents:
        return unchanged
    async with pool.acquire() as conn, conn.transaction():
        await bank_locks.lock_bank_for_rewrite(conn, bank_id)
        for document_id, parts in sorted(contents.items()):
            new_hash = content_hash(*parts)
            old_hash = await documents.document_hash(conn, bank_id, document_id)
            if old_hash == new_hash:
                unchanged.add(document_id)
                continue
            if old_hash is not None:
                await documents.delete_document(conn, bank_id, document_id, keep_row=True)
            await banks.ensure_banks(conn, [bank_id])
            await documents.upsert_document(conn, bank_id, document_id, new_hash, {"parts": len(parts)})
    return unchanged


@router.get("/memories", response_model=MemoryPage, summary="Page through stored facts")
async def list_memories(
    bank_id: BankIdPath,
    pool: PoolDep,
    offset: OffsetQuery,
    limit: int = Query(100, ge=1, le=1000),
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
