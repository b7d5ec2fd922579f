"""The recall playground: every recall option, the packed results and the readable trace."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse
from pydantic import ValidationError
from starlette.datastructures import FormData

from tempr.recall_api.bank_profile import load_bank
from tempr.recall_api.console.forms import describe, text_or_none
from tempr.recall_api.console.render import flash, render
from tempr.recall_api.console.session import check_csrf
from tempr.recall_api.console.trace_view import trace_ids, trace_view
from tempr.recall_api.deps import AdmissionDep, BankIdPath, EmbedderDep, PoolDep, SettingsDep
from tempr.recall_api.recall.config import PRESETS
from tempr.recall_api.routes import recall as recall_routes
from tempr.schemas.recall import RecallRequest
from tempr.store.recall import fetch_units

__all__ = ["router"]

router = APIRouter(prefix="/console/banks/{bank_id}", include_in_schema=False)

FACT_TYPES = ("world", "experience", "opinion", "observation")


def _request(form: FormData) -> RecallRequest:
    """The form as a RecallRequest with the trace on (raises ValidationError)."""
    window = {k: text_or_none(form, f"window_{k}") for k in ("start", "end")}
    tags = text_or_none(form, "tags")
    body: dict[str, Any] = {
        "query": form.get("query") or "",
        "budget": form.get("budget") or "mid",
        "max_tokens": form.get("max_tokens") or 4096,
        "types": [t for t in form.getlist("types") if isinstance(t, str)] or None,
        "tags": [t.strip() for t in tags.split(",") if t.strip()] if tags else None,
        "tags_match": form.get("tags_match") or "any",
        "query_timestamp": text_or_none(form, "query_timestamp"),
        "time_window": window if any(window.values()) else None,
        "preset": form.get("preset") or "default",
        "graph_retriever": text_or_none(form, "graph_retriever"),
        "include": {
            "entities": form.get("include_entities") == "on",
            "chunks": form.get("include_chunks") == "on",
        },
        "trace": True,
    }
    return RecallRequest.model_validate({k: v for k, v in body.items() if v is not None})


@router.get("/recall", response_class=HTMLResponse)
async def playground(request: Request, bank_id: BankIdPath, pool: PoolDep) -> HTMLResponse:
    await load_bank(pool, bank_id)
    return render(
        request,
        "recall.html",
        bank_id=bank_id,
        section="recall",
        presets=sorted(PRESETS),
        fact_types=FACT_TYPES,
    )


@router.post("/recall", dependencies=[Depends(check_csrf)], response_class=HTMLResponse)
async def run(
    request: Request,
    bank_id: BankIdPath,
    pool: PoolDep,
    settings: SettingsDep,
    embedder: EmbedderDep,
    admission: AdmissionDep,
) -> HTMLResponse:
    try:
        body = _request(await request.form())
    except ValidationError as exc:
        return flash(request, 422, describe(exc))
    if body.preset not in PRESETS:
        return flash(request, 422, f"preset: unknown, choose from {', '.join(sorted(PRESETS))}")
    response = await recall_routes.recall(bank_id, body, pool, settings, embedder, admission)
    ids = trace_ids(response.trace or {})
    async with pool.acquire() as conn:
        rows = await fetch_units(conn, bank_id, [UUID(i) for i in ids])
    texts = {str(r["id"]): r["text"] for r in rows}
    return render(
        request, "_recall_result.html", bank_id=bank_id, response=response, view=trace_view(response, texts)
    )
