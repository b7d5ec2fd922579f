"""Opinions a bank holds, with how each one changed."""

from __future__ import annotations

from uuid import UUID

from fastapi import APIRouter, Query

from tempr.errors import NotFound
from tempr.recall_api.deps import BankIdPath, OffsetQuery, PoolDep
from tempr.schemas.api import ErrorBody
from tempr.schemas.reflect import Opinion, OpinionChange, OpinionPage
from tempr.store import opinions

__all__ = ["router"]

router = APIRouter(prefix="/v1/banks/{bank_id}/opinions", tags=["opinions"])


def _opinion(row: object, history: list[OpinionChange] | None = None) -> Opinion:
    r = dict(row)  # type: ignore[call-overload]
    return Opinion(
        id=r["id"],
        bank_id=r["bank_id"],
        text=r["text"],
        confidence=r["confidence"],
        entities=list(r["entities"]),
        evidence_ids=list(r["evidence_ids"]),
        created_at=r["created_at"],
        updated_at=r["updated_at"],
        history=history,
    )


@router.get("", response_model=OpinionPage, summary="The bank's opinions, oldest first")
async def list_opinions(
    bank_id: BankIdPath, pool: PoolDep, offset: OffsetQuery, limit: int = Query(100, ge=1, le=1000)
) -> OpinionPage:
    rows = await opinions.list_opinions(pool, bank_id, limit=limit, offset=offset)
    return OpinionPage(
        bank_id=bank_id,
        items=[_opinion(r) for r in rows],
        total=await opinions.count_opinions(pool, bank_id),
        limit=limit,
        offset=offset,
    )


@router.get(
    "/{opinion_id}",
    response_model=Opinion,
    responses={404: {"model": ErrorBody, "description": "No such opinion in this bank."}},
    summary="One opinion and its history (every reinforcement, weakening and revision)",
)
async def get_opinion(bank_id: BankIdPath, opinion_id: UUID, pool: PoolDep) -> Opinion:
    row = await opinions.get_opinion(pool, bank_id, opinion_id)
    if row is None:
        raise NotFound(f"opinion {opinion_id} not found in bank {bank_id!r}")
    history = [
        OpinionChange.model_validate(dict(h)) for h in await opinions.opinion_history(pool, opinion_id)
    ]
    return _opinion(row, history)
