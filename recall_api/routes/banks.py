"""Banks: profiles (name, background, disposition, config), deletion, stats."""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any

from fastapi import APIRouter, Query, Response, status

from tempr.errors import NotFound
from tempr.recall_api.auth import PrincipalDep
from tempr.recall_api.bank_profile import load_bank, merge_background
from tempr.recall_api.deps import BankIdPath, OffsetQuery, OptionalLLMDep, PoolDep, PublisherDep
from tempr.schemas.api import BankStats, ErrorBody
from tempr.schemas.banks import Bank, BankDeletedOut, BankIn, BankPage, BankPatch
from tempr.schemas.events import BankDeleted
from tempr.store import bank_locks, banks
from tempr.store.bank_stats import bank_stats
from tempr.store.banks import to_bank

__all__ = ["router"]

log = logging.getLogger(__name__)

router = APIRouter(prefix="/v1/banks", tags=["banks"])

_NOT_FOUND: dict[int | str, dict[str, Any]] = {
    404: {"model": ErrorBody, "description": "The bank does not exist."}
}


@router.get("", response_model=BankPage, summary="List banks, by id")
async def list_banks(
    pool: PoolDep,
    principal: PrincipalDep,
    offset: OffsetQuery,
    limit: int = Query(100, ge=1, le=1000),
) -> BankPage:
    visible = principal.visible_patterns()  # a key sees only its own banks
    rows = await banks.list_banks(pool, limit=limit, offset=offset, visible=visible)
    total = await banks.count_banks(pool, visible)
    return BankPage(items=[to_bank(r) for r in rows], total=total, limit=limit, offset=offset)


@router.put(
    "/{bank_id}",
    response_model=Bank,
    responses={201: {"model": Bank, "description": "Created."}},
    summary="Create a bank or replace its profile",
)
async def put_bank(bank_id: BankIdPath, body: BankIn, pool: PoolDep, response: Response) -> Bank:
    async with pool.acquire() as conn:
        row, created = await banks.put_bank(
            conn,
            bank_id,
            name=body.name,
            background=body.background,
            disposition=body.disposition.model_dump(),
            config=body.config.model_dump(exclude_none=True),
        )
    response.status_code = status.HTTP_201_CREATED if created else status.HTTP_200_OK
    return to_bank(row)


@router.get("/{bank_id}", response_model=Bank, responses=_NOT_FOUND, summary="A bank's profile")
async def get_bank(bank_id: BankIdPath, pool: PoolDep) -> Bank:
    return await load_bank(pool, bank_id)


@router.patch(
    "/{bank_id}",
    response_model=Bank,
    responses={**_NOT_FOUND, 502: {"model": ErrorBody, "description": "The LLM failed to merge."}},
    summary="Change part of a profile; a new background is merged into the old one",
)
async def patch_bank(bank_id: BankIdPath, body: BankPatch, pool: PoolDep, llm: OptionalLLMDep) -> Bank:
    current = await load_bank(pool, bank_id)
    background = None
    if body.background is not None:
        background = await merge_background(llm, current.background, body.background)
    async with pool.acquire() as conn:
        row = await banks.update_bank(
            conn,
            bank_id,
            name=body.name,
            background=background,
            disposition=None if body.disposition is None else body.disposition.model_dump(exclude_none=True),
            # An explicit null clears an override (the server's default applies again).
            config=None if body.config is None else body.config.model_dump(exclude_unset=True),
        )
    if row is None:
        raise NotFound(f"bank {bank_id!r} does not exist")
    return to_bank(row)


@router.delete(
    "/{bank_id}",
    response_model=BankDeletedOut,
    responses=_NOT_FOUND,
    summary="Delete a bank and everything in it; a tombstone keeps a replay from bringing it back",
)
async def delete_bank(bank_id: BankIdPath, pool: PoolDep, publisher: PublisherDep) -> BankDeletedOut:
    deleted_at = datetime.now(UTC)
    async with pool.acquire() as conn, conn.transaction():
        await bank_locks.lock_bank_for_rewrite(conn, bank_id)
        if await banks.get_bank(conn, bank_id) is None:
            raise NotFound(f"bank {bank_id!r} does not exist")
        removed = await banks.delete_bank(conn, bank_id, deleted_at=deleted_at)
    try:
        await publisher.publish_tombstone(BankDeleted(bank_id=bank_id, deleted_at=deleted_at))
    except Exception as exc:  # the rows are gone and the tombstone row guards this store
        log.warning("could not publish the tombstone of bank %s: %r", bank_id, exc)
    return BankDeletedOut(bank_id=bank_id, deleted=removed)


@router.get(
    "/{bank_id}/stats",
    response_model=BankStats,
    responses=_NOT_FOUND,
    summary="Counts by fact type, entities, links by type, documents, pending events, last update",
)
async def stats(bank_id: BankIdPath, pool: PoolDep) -> BankStats:
    await load_bank(pool, bank_id)
    return BankStats(bank_id=bank_id, **await bank_stats(pool, bank_id))
