"""Bank-level views."""

from __future__ import annotations

from fastapi import APIRouter

from recall_api.deps import BankIdPath, PoolDep
from schemas.api import BankStats
from store.bank_stats import bank_stats

__all__ = ["router"]

router = APIRouter(prefix="/v1/banks/{bank_id}", tags=["banks"])


@router.get("/stats", response_model=BankStats, summary="Counts by fact type, entities, links, lag")
async def stats(bank_id: BankIdPath, pool: PoolDep) -> BankStats:
    return BankStats(bank_id=bank_id, **await bank_stats(pool, bank_id))
