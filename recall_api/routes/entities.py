"""Canonical entities of a bank, and the facts that mention each."""

from __future__ import annotations

from uuid import UUID

from fastapi import APIRouter, Query

from tempr.errors import NotFound
from tempr.recall_api.deps import BankIdPath, OffsetQuery, PoolDep
from tempr.schemas.api import Entity, EntityDetail, EntityFact, EntityPage, ErrorBody
from tempr.store import entities

__all__ = ["router"]

router = APIRouter(prefix="/v1/banks/{bank_id}", tags=["entities"])


@router.get("/entities", response_model=EntityPage, summary="Page through a bank's entities")
async def list_entities(
    bank_id: BankIdPath,
    pool: PoolDep,
    offset: OffsetQuery,
    limit: int = Query(100, ge=1, le=1000),
) -> EntityPage:
    rows = await entities.list_entities(pool, bank_id, limit=limit, offset=offset)
    return EntityPage(
        bank_id=bank_id,
        total=await entities.count_entities(pool, bank_id),
        limit=limit,
        offset=offset,
        items=[Entity.model_validate(dict(r)) for r in rows],
    )


@router.get(
    "/entities/{entity_id}",
    response_model=EntityDetail,
    responses={404: {"model": ErrorBody, "description": "No such entity in this bank"}},
    summary="One entity with the facts that mention it",
)
async def get_entity(bank_id: BankIdPath, entity_id: UUID, pool: PoolDep) -> EntityDetail:
    row = await entities.get_entity(pool, bank_id, entity_id)
    if row is None:
        raise NotFound(f"entity {entity_id} not found in bank {bank_id}")
    facts = [EntityFact.model_validate(dict(r)) for r in await entities.entity_facts(pool, entity_id)]
    return EntityDetail(**dict(row), facts=facts)
