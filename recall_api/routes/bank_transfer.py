"""`GET /v1/banks/{b}/export` and `POST /v1/banks/{b}/import`: a bank as a stream of JSON lines."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import StreamingResponse

from tempr.errors import NotFound
from tempr.recall_api.bank_transfer import export_lines, import_lines
from tempr.recall_api.deps import BankIdPath, EmbedderDep, PoolDep
from tempr.schemas.api import ErrorBody
from tempr.schemas.bank_export import ImportResult
from tempr.store import banks

__all__ = ["router"]

router = APIRouter(prefix="/v1/banks/{bank_id}", tags=["lifecycle"])

_JSONL = "application/x-ndjson"


@router.get(
    "/export",
    response_class=StreamingResponse,
    responses={
        200: {"content": {_JSONL: {}}, "description": "The header line, then one record per line"},
        404: {"model": ErrorBody, "description": "No such bank"},
    },
    summary="Export the whole bank (profile, messages, chunks, facts with vectors, entities, links, "
    "opinions, corrections, tombstones) as versioned JSON lines, streamed",
)
async def export_bank(bank_id: BankIdPath, pool: PoolDep, embedder: EmbedderDep) -> StreamingResponse:
    if await banks.get_bank(pool, bank_id) is None:
        raise NotFound(f"bank {bank_id} not found")
    return StreamingResponse(
        export_lines(pool, bank_id, embedding_model=embedder.model_name),
        media_type=_JSONL,
        headers={"content-disposition": f'attachment; filename="{bank_id}.jsonl"'},
    )


_BODY: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "content": {
            _JSONL: {
                "schema": {"type": "string", "description": "An export, as `GET .../export` wrote it"},
                "example": '{"record": "header", "format": "tempr.bank-export", "version": 1, "bank_id": "alice",'
                ' "exported_at": "2026-12-01T12:00:00Z", "tempr_version": "0.1.0",'
                ' "embedding_model": "packaged:all-MiniLM-L6-v2", "embedding_dimension": 384}\n'
                '{"record": "bank", "name": "Alice", ...}\n...\n{"record": "end", "counts": {"fact": 659}}\n',
            }
        },
    }
}


@router.post(
    "/import",
    response_model=ImportResult,
    responses={400: {"model": ErrorBody, "description": "Not an export, or one this server cannot take"}},
    openapi_extra=_BODY,
    summary="Import an export into this bank id: same ids (another id: mapped ids), idempotent, resumable",
)
async def import_bank(
    bank_id: BankIdPath, request: Request, pool: PoolDep, embedder: EmbedderDep
) -> ImportResult:
    return await import_lines(pool, bank_id, request.stream(), embedding_model=embedder.model_name)
