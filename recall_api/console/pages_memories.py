"""Memories (a filtered page of facts; a fact's provenance and links) and documents."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Literal
from urllib.parse import urlencode
from uuid import UUID

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import HTMLResponse
from pydantic import ValidationError

from tempr.errors import NotFound
from tempr.recall_api.console.forms import describe, text_or_none
from tempr.recall_api.console.render import PAGE, flash, render, render_bank_list
from tempr.recall_api.console.session import check_csrf
from tempr.recall_api.deps import BankIdPath, DocumentIdPath, PoolDep, PublisherDep
from tempr.recall_api.routes import corrections as correction_routes
from tempr.recall_api.routes import documents as document_routes
from tempr.recall_api.routes import forget as forget_routes
from tempr.schemas.lifecycle import MemoryPatch
from tempr.store import browse, documents
from tempr.store.neighbourhood import neighbourhood
from tempr.store.recall import RecallFilters, fetch_chunks, fetch_units

__all__ = ["router"]

router = APIRouter(prefix="/console/banks/{bank_id}", include_in_schema=False)

FACT_TYPES = ("world", "experience", "opinion", "observation")


def _date(value: str, field: str, end: bool = False) -> datetime | None:
    if not value:
        return None
    try:
        day = datetime.fromisoformat(value)
    except ValueError as exc:
        raise _Invalid(f"{field}: not a date (YYYY-MM-DD): {value!r}") from exc
    day = day if day.tzinfo else day.replace(tzinfo=UTC)
    return day.replace(hour=23, minute=59, second=59) if end and len(value) == 10 else day


class _Invalid(ValueError):
    pass


@router.get("/memories", response_class=HTMLResponse)
async def memories(
    request: Request,
    bank_id: BankIdPath,
    pool: PoolDep,
    type: Literal["", "world", "experience", "opinion", "observation"] = "",
    text: str = Query("", max_length=500),
    tags: str = Query("", max_length=1000),
    tags_match: Literal["any", "all", "any_strict", "all_strict", "exact"] = "any",
    start: str = Query("", max_length=40),
    end: str = Query("", max_length=40),
    offset: int = Query(0, ge=0, le=1_000_000),
) -> HTMLResponse:
    params = {"type": type, "text": text, "tags": tags, "tags_match": tags_match, "start": start, "end": end}
    error = None
    rows: list[object] = []
    total = 0
    try:
        tag_list = [t.strip() for t in tags.split(",") if t.strip()]
        filters = RecallFilters(
            types=[type] if type else None,
            tags=tag_list or None,
            tags_match=tags_match,
            window_start=_date(start, "from"),
            window_end=_date(end, "to", end=True),
        )
        rows, total = await browse.browse_units(
            pool, bank_id, filters=filters, text=text.strip() or None, limit=PAGE, offset=offset
        )
    except _Invalid as exc:
        error = str(exc)
    template = "_memories_table.html" if request.headers.get("hx-target") == "memories" else "memories.html"
    return render(
        request,
        template,
        status_code=422 if error else 200,
        bank_id=bank_id,
        section="memories",
        rows=rows,
        total=total,
        offset=offset,
        page=PAGE,
        f=params,
        query=urlencode(params),
        fact_types=FACT_TYPES,
        error=error,
    )


@router.get("/memories/{unit_id}", response_class=HTMLResponse)
async def fact(request: Request, bank_id: BankIdPath, unit_id: UUID, pool: PoolDep) -> HTMLResponse:
    row = await browse.fact(pool, bank_id, unit_id)
    if row is None:
        raise NotFound(f"fact {unit_id} not found in bank {bank_id}")
    messages = await browse.source_messages(pool, bank_id, row["source_message_ids"])
    links = await neighbourhood(pool, bank_id, [unit_id], per_type=8)
    others = {lk["to_id"] if lk["from_id"] == unit_id else lk["from_id"] for lk in links}
    async with pool.acquire() as conn:
        chunk = await fetch_chunks(conn, bank_id, [row["chunk_id"]]) if row["chunk_id"] else {}
        related = {r["id"]: r for r in await fetch_units(conn, bank_id, [*others, *row["evidence_ids"]])}
    link_rows = [
        {
            "type": lk["link_type"],
            "weight": lk["weight"],
            "outgoing": lk["from_id"] == unit_id,
            "other": related.get(lk["to_id"] if lk["from_id"] == unit_id else lk["from_id"]),
        }
        for lk in sorted(links, key=lambda lk: (lk["link_type"], -lk["weight"]))
    ]
    values = {
        "bank_id": bank_id,
        "section": "memories",
        "fact": row,
        "messages": messages,
        "chunk": chunk.get(row["chunk_id"]),
        "links": link_rows,
        "evidence": [related[e] for e in row["evidence_ids"] if e in related],
    }
    template = "_fact.html" if request.headers.get("hx-request") else "fact.html"
    return render(request, template, **values)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


@router.post("/memories/{unit_id}/forget", dependencies=[Depends(check_csrf)], response_class=HTMLResponse)
async def forget_fact(
    request: Request, bank_id: BankIdPath, unit_id: UUID, publisher: PublisherDep
) -> HTMLResponse:
    """As `DELETE /v1/banks/{b}/memories/{id}`: tombstoned, so no replay brings it back."""
    out = await forget_routes.forget_memory(bank_id, unit_id, publisher)
    return flash(
        request,
        200,
        f"Fact forgotten, with {_plural(out.observations_removed, 'observation')} resting on it; "
        f"{_plural(out.opinions_updated, 'opinion')} no longer cite it.",
    )


@router.post("/memories/{unit_id}/correct", dependencies=[Depends(check_csrf)], response_class=HTMLResponse)
async def correct_fact(
    request: Request, bank_id: BankIdPath, unit_id: UUID, publisher: PublisherDep
) -> HTMLResponse:
    """As `PATCH /v1/banks/{b}/memories/{id}` with a new text: applied through the pipeline."""
    form = await request.form()
    try:
        text = text_or_none(form, "text")
        patch = MemoryPatch.model_validate(
            {**({"text": text} if text else {}), "reason": form.get("reason") or ""}
        )
    except ValidationError as exc:
        return flash(request, 422, describe(exc))
    await correction_routes.correct_memory(bank_id, unit_id, patch, publisher)
    return flash(
        request, 202, "Correction accepted: the fact shows the new text once the pipeline has applied it."
    )


@router.get("/documents", response_class=HTMLResponse)
async def documents_page(
    request: Request, bank_id: BankIdPath, pool: PoolDep, offset: int = Query(0, ge=0, le=1_000_000)
) -> HTMLResponse:
    rows = await documents.list_documents(pool, bank_id, limit=PAGE, offset=offset)
    total = await documents.count_documents(pool, bank_id)
    return render_bank_list(request, "documents", bank_id, rows, total, offset)


@router.post(
    "/documents/{document_id}/delete", dependencies=[Depends(check_csrf)], response_class=HTMLResponse
)
async def delete_document(
    request: Request, bank_id: BankIdPath, document_id: DocumentIdPath, pool: PoolDep
) -> HTMLResponse:
    out = await document_routes.delete_document(bank_id, pool, document_id)
    return flash(
        request,
        200,
        f"Document {document_id} deleted with its {out.facts_removed} "
        f"fact{'' if out.facts_removed == 1 else 's'}.",
    )
