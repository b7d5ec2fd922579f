"""Records that failed somewhere in the pipeline, with their reasons."""

from __future__ import annotations

from fastapi import APIRouter, Query

from recall_api.deps import PoolDep
from schemas.api import DeadLetterOut
from store.dead_letters import list_dead_letters

__all__ = ["router"]

router = APIRouter(prefix="/v1", tags=["dead letters"])


@router.get("/dead-letters", response_model=list[DeadLetterOut])
async def dead_letters(
    pool: PoolDep, limit: int = Query(100, ge=1, le=1000), offset: int = Query(0, ge=0)
) -> list[DeadLetterOut]:
    return [
        DeadLetterOut.model_validate(r) for r in await list_dead_letters(pool, limit=limit, offset=offset)
    ]
