"""Banks: the searchable list with counts, a bank's page (stats and profile), create, edit, delete."""

from __future__ import annotations

import re

from fastapi import APIRouter, Depends, HTTPException, Query, Request, Response
from fastapi.responses import HTMLResponse
from pydantic import ValidationError

from tempr.recall_api.auth import PrincipalDep
from tempr.recall_api.bank_profile import load_bank
from tempr.recall_api.console.forms import bank_in, describe
from tempr.recall_api.console.render import PAGE, flash, render
from tempr.recall_api.console.session import check_csrf
from tempr.recall_api.deps import BankIdPath, PoolDep, PublisherDep
from tempr.recall_api.routes import banks as bank_routes
from tempr.schemas.banks import BankIn
from tempr.schemas.ids import BANK_ID_PATTERN
from tempr.store import banks
from tempr.store.bank_stats import bank_stats, banks_overview

__all__ = ["router"]

router = APIRouter(prefix="/console/banks", include_in_schema=False)

_DONE = {
    "deleted": "Bank {bank} deleted, with everything in it ({n} rows).",
    "created": "Bank {bank} created.",
}


@router.get("", response_class=HTMLResponse)
async def list_banks(
    request: Request,
    pool: PoolDep,
    principal: PrincipalDep,
    q: str = Query("", max_length=128),
    offset: int = Query(0, ge=0, le=1_000_000),
    done: str = "",
    bank: str = Query("", max_length=128),
    n: int = 0,
) -> HTMLResponse:
    rows, total = await banks_overview(
        pool, visible=principal.visible_patterns(), search=q.strip() or None, limit=PAGE, offset=offset
    )
    message = _DONE[done].format(bank=bank, n=n) if done in _DONE else None
    template = "_banks_table.html" if request.headers.get("hx-target") == "banks" else "banks.html"
    return render(request, template, rows=rows, total=total, q=q, offset=offset, page=PAGE, flash=message)


@router.post("", dependencies=[Depends(check_csrf)], response_model=None)
async def create_bank(request: Request, pool: PoolDep, principal: PrincipalDep) -> Response:
    form = await request.form()
    bank_id = str(form.get("bank_id") or "").strip()
    if not re.fullmatch(BANK_ID_PATTERN, bank_id):
        return flash(request, 422, "bank_id: 1-128 letters, digits and . _ : - (not first)")
    if not principal.sees(bank_id):
        raise HTTPException(403, f"this key may not use bank {bank_id!r}")
    if await banks.get_bank(pool, bank_id) is not None:
        return flash(request, 409, f"bank {bank_id} already exists")
    try:
        body = bank_in(form)
    except ValidationError as exc:
        return flash(request, 422, describe(exc))
    await bank_routes.put_bank(bank_id, body, pool, Response())
    return Response(headers={"HX-Redirect": f"/console/banks/{bank_id}?done=created"})


@router.get("/{bank_id}", response_class=HTMLResponse)
async def bank_page(request: Request, bank_id: BankIdPath, pool: PoolDep, done: str = "") -> HTMLResponse:
    bank = await load_bank(pool, bank_id)
    stats = await bank_stats(pool, bank_id)
    message = _DONE[done].format(bank=bank_id, n=0) if done == "created" else None
    return render(request, "bank.html", bank_id=bank_id, bank=bank, stats=stats, section="", flash=message)


@router.post("/{bank_id}/profile", dependencies=[Depends(check_csrf)], response_class=HTMLResponse)
async def save_profile(request: Request, bank_id: BankIdPath, pool: PoolDep) -> HTMLResponse:
    await load_bank(pool, bank_id)  # 404 for a bank that is gone
    try:
        body: BankIn = bank_in(await request.form())
    except ValidationError as exc:
        return flash(request, 422, describe(exc))
    bank = await bank_routes.put_bank(bank_id, body, pool, Response())
    d = bank.disposition
    return flash(
        request,
        200,
        f"Profile of {bank_id} saved: skepticism {d.skepticism}, literalism {d.literalism}, "
        f"empathy {d.empathy}, bias strength {d.bias_strength:g}.",
    )


@router.post("/{bank_id}/delete", dependencies=[Depends(check_csrf)])
async def delete_bank(bank_id: BankIdPath, pool: PoolDep, publisher: PublisherDep) -> Response:
    out = await bank_routes.delete_bank(bank_id, pool, publisher)
    removed = sum(out.deleted.values())
    return Response(headers={"HX-Redirect": f"/console/banks?done=deleted&bank={bank_id}&n={removed}"})
