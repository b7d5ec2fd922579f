"""Documents of a bank: list, and delete with their facts."""

from __future__ import annotations

from fastapi import APIRouter, Query

from tempr.errors import NotFound
from tempr.recall_api.deps import BankIdPath, DocumentIdPath, OffsetQuery, PoolDep
from tempr.schemas.api import Document, DocumentDeleted, DocumentPage, ErrorBody
from tempr.store import bank_locks, documents

__all__ = ["router"]

router = APIRouter(prefix="/v1/banks/{bank_id}", tags=["documents"])


@router.get("/documents", response_model=DocumentPage, summary="Page through a bank's documents")
async def list_documents(
    bank_id: BankIdPath,
    pool: PoolDep,
    offset: OffsetQuery,
    limit: int = Query(100, ge=1, le=1000),
) -> DocumentPage:
    rows = await documents.list_documents(pool, bank_id, limit=limit, offset=offset)
    return DocumentPage(
        bank_id=bank_id,
        total=await documents.count_documents(pool, bank_id),
        limit=limit,
        offset=offset,
        items=[Document.model_validate(dict(r)) for r in rows],
    )


@router.delete(
    "/documents/{document_id}",
    response_model=DocumentDeleted,
    responses={404: {"model": ErrorBody, "description": "No such document in this bank"}},
    summary="Delete a document and every fact extracted from it",
)
async def delete_document(bank_id: BankIdPath, pool: PoolDep, document_id: DocumentIdPath) -> DocumentDeleted:
    async with pool.acquire() as conn, conn.transaction():
        await bank_locks.lock_bank_for_rewrite(conn, bank_id)
        if await documents.document_hash(conn, bank_id, document_id) is None:
            raise NotFound(f"document {document_id!r} not found in bank {bank_id}")
        removed = await documents.delete_document(conn, bank_id, document_id, keep_row=False)
    return DocumentDeleted(bank_id=bank_id, document_id=document_id, facts_removed=removed)
