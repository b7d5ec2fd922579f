"""Recall: the four-arm TEMPR search over a bank's facts."""

from __future__ import annotations

from fastapi import APIRouter

from tempr.inference.rerank import reranker_from_settings
from tempr.recall_api.deps import AdmissionDep, BankIdPath, EmbedderDep, PoolDep, SettingsDep
from tempr.recall_api.recall.pipeline import run_recall
from tempr.schemas.api import ErrorBody
from tempr.schemas.recall import RecallRequest, RecallResponse

__all__ = ["router"]

router = APIRouter(prefix="/v1/banks/{bank_id}", tags=["recall"])


@router.post(
    "/recall",
    response_model=RecallResponse,
    # Unset fields (result `entities`/`chunk` when not requested) stay out of the JSON.
    response_model_exclude_unset=True,
    responses={
        400: {"model": ErrorBody, "description": "Invalid request, e.g. an unknown preset or a bad `after`."},
        504: {"model": ErrorBody, "description": "The `after` token was not materialized in time."},
    },
    summary="Recall: semantic, keyword, graph and temporal search, fused, reranked, token-packed",
)
async def recall(
    bank_id: BankIdPath,
    body: RecallRequest,
    pool: PoolDep,
    settings: SettingsDep,
    embedder: EmbedderDep,
    admission: AdmissionDep,
) -> RecallResponse:
    return await run_recall(
        pool,
        embedder,
        reranker_from_settings(settings),
        bank_id,
        body,
        max_consistency_wait_s=settings.max_consistency_wait_s,
        admission=admission,
    )
