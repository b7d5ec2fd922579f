"""Reflect (or why it is unavailable) and opinions with their history."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import HTMLResponse
from pydantic import ValidationError

from tempr.recall_api.bank_profile import load_bank
from tempr.recall_api.console.forms import describe, text_or_none
from tempr.recall_api.console.render import PAGE, flash, render, render_bank_list
from tempr.recall_api.console.session import check_csrf
from tempr.recall_api.deps import BankIdPath, EmbedderDep, OptionalLLMDep, PoolDep, PublisherDep, SettingsDep
from tempr.recall_api.routes import opinions as opinion_routes
from tempr.recall_api.routes import reflect as reflect_routes
from tempr.schemas.reflect import OpinionChange, ReflectRequest
from tempr.store.recall import fetch_units

__all__ = ["router"]

router = APIRouter(prefix="/console/banks/{bank_id}", include_in_schema=False)

NO_LLM = (
    "Reflect is unavailable: no LLM is configured on this server. It needs one to answer in the "
    "bank's voice (set TEMPR_LLM_BASE_URL and TEMPR_LLM_MODEL, then restart). Retain and recall "
    "work without it."
)


@router.get("/reflect", response_class=HTMLResponse)
async def reflect_page(
    request: Request, bank_id: BankIdPath, pool: PoolDep, llm: OptionalLLMDep
) -> HTMLResponse:
    bank = await load_bank(pool, bank_id)
    return render(
        request,
        "reflect.html",
        bank_id=bank_id,
        section="reflect",
        bank=bank,
        unavailable=NO_LLM if llm is None else None,
    )


@router.post("/reflect", dependencies=[Depends(check_csrf)], response_class=HTMLResponse)
async def reflect(
    request: Request,
    bank_id: BankIdPath,
    pool: PoolDep,
    settings: SettingsDep,
    embedder: EmbedderDep,
    publisher: PublisherDep,
    llm: OptionalLLMDep,
) -> HTMLResponse:
    if llm is None:
        return flash(request, 501, NO_LLM)
    form = await request.form()
    body: dict[str, Any] = {
        "query": form.get("query") or "",
        "budget": text_or_none(form, "budget"),
        "context": text_or_none(form, "context"),
        "form_opinions": form.get("form_opinions") == "on",
    }
    try:
        req = ReflectRequest.model_validate({k: v for k, v in body.items() if v is not None})
    except ValidationError as exc:
        return flash(request, 422, describe(exc))
    out = await reflect_routes.reflect(bank_id, req, pool, settings, embedder, publisher, llm)
    return render(request, "_reflect_result.html", bank_id=bank_id, out=out)


@router.get("/opinions", response_class=HTMLResponse)
async def opinions_page(
    request: Request, bank_id: BankIdPath, pool: PoolDep, offset: int = Query(0, ge=0, le=1_000_000)
) -> HTMLResponse:
    page = await opinion_routes.list_opinions(bank_id, pool, offset, PAGE)
    return render_bank_list(request, "opinions", bank_id, page.items, page.total, offset)


def chart_points(confidence: float | None, history: list[OpinionChange]) -> list[tuple[int, float]]:
    """Confidence after each change, starting from before the first (0-1, for the chart)."""
    if not history:
        return [(0, confidence or 0.0)]
    points = [(0, history[0].previous_confidence or 0.0)]
    points += [(i, h.new_confidence or 0.0) for i, h in enumerate(history, start=1)]
    return points


@router.get("/opinions/{opinion_id}", response_class=HTMLResponse)
async def opinion_page(
    request: Request, bank_id: BankIdPath, opinion_id: UUID, pool: PoolDep
) -> HTMLResponse:
    opinion = await opinion_routes.get_opinion(bank_id, opinion_id, pool)
    history = opinion.history or []
    moved_by = {e for h in history for e in h.evidence_ids} | set(opinion.evidence_ids)
    async with pool.acquire() as conn:
        texts = {r["id"]: r["text"] for r in await fetch_units(conn, bank_id, list(moved_by))}
    return render(
        request,
        "opinion.html",
        bank_id=bank_id,
        section="opinions",
        opinion=opinion,
        history=history,
        points=chart_points(opinion.confidence, history),
        texts=texts,
    )
