"""Reflect: the bank thinks about a question with its memories and its disposition."""

from __future__ import annotations

from fastapi import APIRouter

from tempr.inference.rerank import reranker_from_settings
from tempr.recall_api.bank_profile import load_bank
from tempr.recall_api.deps import BankIdPath, EmbedderDep, LLMDep, PoolDep, PublisherDep, SettingsDep
from tempr.recall_api.reflect import run_reflect
from tempr.schemas.api import ErrorBody
from tempr.schemas.reflect import ReflectRequest, ReflectResponse

__all__ = ["router"]

router = APIRouter(prefix="/v1/banks/{bank_id}", tags=["reflect"])


@router.post(
    "/reflect",
    response_model=ReflectResponse,
    responses={
        400: {
            "model": ErrorBody,
            "description": "Invalid request, e.g. a response_schema that is not a schema.",
        },
        404: {"model": ErrorBody, "description": "The bank does not exist."},
        502: {"model": ErrorBody, "description": "The LLM failed or kept answering off-schema."},
        501: {
            "model": ErrorBody,
            "description": "No LLM is configured on this server (permanent: do not retry).",
        },
        504: {"model": ErrorBody, "description": "The `after` token was not materialized in time."},
    },
    summary="Reflect: answer in the bank's voice from its memories, forming opinions",
)
async def reflect(
    bank_id: BankIdPath,
    body: ReflectRequest,
    pool: PoolDep,
    settings: SettingsDep,
    embedder: EmbedderDep,
    publisher: PublisherDep,
    llm: LLMDep,
) -> ReflectResponse:
    return await run_reflect(
        pool=pool,
        embedder=embedder,
        reranker=reranker_from_settings(settings),
        llm=llm,
        publisher=publisher,
        bank=await load_bank(pool, bank_id),
        req=body,
        max_consistency_wait_s=settings.max_consistency_wait_s,
    )
