"""API keys (admin, every bank) and the audit log (admin, rows of the key's banks)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query, Request, status

from tempr.errors import NotFound
from tempr.keyring import create_key
from tempr.recall_api.auth import PrincipalDep
from tempr.recall_api.deps import PoolDep
from tempr.schemas.api import ErrorBody
from tempr.schemas.ids import BANK_ID_PATTERN
from tempr.schemas.keys import AuditEntry, AuditPage, KeyCreate, KeyCreated, KeyOut
from tempr.schemas.limits import SafeText
from tempr.store import audit, keys

__all__ = ["router"]

router = APIRouter(prefix="/v1", tags=["keys"])


@router.get("/keys", response_model=list[KeyOut], summary="API keys (never their secrets)")
async def list_keys(pool: PoolDep, include_revoked: bool = Query(False)) -> list[KeyOut]:
    return [
        KeyOut.model_validate(dict(r)) for r in await keys.list_keys(pool, include_revoked=include_revoked)
    ]


@router.post(
    "/keys",
    status_code=status.HTTP_201_CREATED,
    response_model=KeyCreated,
    responses={409: {"model": ErrorBody, "description": "A live key already has this name."}},
    summary="Create a key; its secret is in this answer only",
)
async def create(body: KeyCreate, pool: PoolDep, principal: PrincipalDep, request: Request) -> KeyCreated:
    row, whole = await create_key(
        pool,
        request.app.state.pepper,
        name=body.name,
        scopes=body.scopes,
        banks=body.banks,
        created_by=principal.name,
        expires_at=body.expires_at,
        rate_limit_per_min=body.rate_limit_per_min,
    )
    request.state.audit["detail"] = {
        "key": row["id"],
        "name": row["name"],
        "scopes": row["scopes"],
        "banks": row["banks"],
    }
    return KeyCreated(**dict(row), key=whole)


@router.delete(
    "/keys/{key}",
    response_model=KeyOut,
    responses={404: {"model": ErrorBody, "description": "No live key with this id or name."}},
    summary="Revoke a key (by id or name): it stops working at once",
)
async def revoke(key: Annotated[SafeText, Path()], pool: PoolDep, request: Request) -> KeyOut:
    row = await keys.revoke_key(pool, key)
    if row is None:
        raise NotFound(f"no live key with id or name {key!r}")
    request.state.audit["detail"] = {"key": row["id"], "name": row["name"]}
    return KeyOut.model_validate(dict(row))


@router.get("/audit", response_model=AuditPage, summary="Admin actions, newest first")
async def audit_log(
    pool: PoolDep,
    principal: PrincipalDep,
    limit: int = Query(100, ge=1, le=1000),
    offset: int = Query(0, ge=0, le=1_000_000),
    bank_id: str | None = Query(None, pattern=BANK_ID_PATTERN),
) -> AuditPage:
    rows = await audit.list_audit(
        pool, limit=limit, offset=offset, bank_id=bank_id, visible=principal.visible_patterns()
    )
    items = [AuditEntry.model_validate(dict(r)) for r in rows]
    return AuditPage(items=items, limit=limit, offset=offset)
