"""One fact in detail, and its correction through the pipeline.

A correction is recorded (one transaction) and then published to the extractor, which finds
its entities and embeds it like a new fact; the resolver links it and the materializer writes
it over the old version, keeping that one in the fact's history. A publish that fails leaves
the correction pending: the sweeper publishes it again.
"""

from __future__ import annotations

import logging
from typing import Any
from uuid import UUID

from fastapi import APIRouter, status

from tempr.errors import NotFound
from tempr.recall_api.deps import BankIdPath, PoolDep, PublisherDep
from tempr.schemas.api import ConsistencyToken, Entity, ErrorBody
from tempr.schemas.lifecycle import CorrectionAccepted, FactVersion, MemoryDetail, MemoryLinkOut, MemoryPatch
from tempr.store import bank_locks, corrections, memories, messages
from tempr.streams.topics import CHUNKS

__all__ = ["router"]

log = logging.getLogger(__name__)

router = APIRouter(prefix="/v1/banks/{bank_id}", tags=["lifecycle"])

_NOT_FOUND: dict[int | str, dict[str, Any]] = {
    404: {"model": ErrorBody, "description": "No such fact in this bank"}
}


@router.get(
    "/memories/{memory_id}",
    response_model=MemoryDetail,
    responses=_NOT_FOUND,
    summary="One fact with its provenance, entities, links and earlier versions",
)
async def get_memory(bank_id: BankIdPath, memory_id: UUID, pool: PoolDep) -> MemoryDetail:
    row = await memories.get_unit(pool, bank_id, memory_id)
    if row is None:
        raise NotFound(f"memory {memory_id} not found in bank {bank_id}")
    return MemoryDetail.model_validate(
        {
            **dict(row),
            "entities": [
                Entity.model_validate(dict(r)) for r in await memories.unit_entities(pool, memory_id)
            ],
            "links": [
                MemoryLinkOut.model_validate(dict(r)) for r in await memories.unit_links(pool, memory_id)
            ],
            "history": [
                FactVersion.model_validate(dict(r))
                for r in await corrections.fact_history(pool, bank_id, memory_id)
            ],
        }
    )


@router.patch(
    "/memories/{memory_id}",
    status_code=status.HTTP_202_ACCEPTED,
    response_model=CorrectionAccepted,
    responses=_NOT_FOUND,
    summary="Correct a fact (text, dates, tags): re-embedded, re-linked, the old version kept in history",
)
async def correct_memory(
    bank_id: BankIdPath, memory_id: UUID, body: MemoryPatch, publisher: PublisherDep
) -> CorrectionAccepted:
    async with publisher.pool.acquire() as conn, conn.transaction():
        await bank_locks.lock_bank_for_rewrite(conn, bank_id)
        correction = await corrections.record_correction(
            conn, bank_id, memory_id, body.changes(), reason=body.reason
        )
        if correction is None:
            raise NotFound(f"memory {memory_id} not found in bank {bank_id}")
        head = await messages.max_seq(conn, bank_id)
    try:
        await publisher.publish_corrections([correction])
    except Exception as exc:  # pending in the table: the sweeper publishes it
        log.warning("publishing correction %s failed, left to the sweeper: %r", correction.id, exc)
    return CorrectionAccepted(
        bank_id=bank_id,
        id=memory_id,
        correction_id=correction.id,
        consistency=ConsistencyToken(
            token=ConsistencyToken.encode(head, correction.seq),
            journal_seq=head,
            topic=CHUNKS.name,
            partitions={},
        ),
    )
