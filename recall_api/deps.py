"""Dependencies injected into routes: the pool, the publisher, the settings."""

from __future__ import annotations

from typing import Annotated

import asyncpg
from fastapi import Depends, Path, Query, Request
from fastapi.exceptions import RequestValidationError

from tempr.errors import NotConfigured
from tempr.inference.embeddings import Embedder
from tempr.inference.llm import LLMClient
from tempr.limits import limits
from tempr.recall_api.admission import Admission
from tempr.schemas.ids import BANK_ID_PATTERN
from tempr.schemas.limits import SafeText
from tempr.settings import Settings
from tempr.streams.publisher import Publisher

__all__ = [
    "AdmissionDep",
    "BankIdPath",
    "DocumentIdPath",
    "EmbedderDep",
    "LLMDep",
    "OffsetQuery",
    "OptionalLLMDep",
    "PoolDep",
    "PublisherDep",
    "SettingsDep",
]


def _admission(request: Request) -> Admission:
    return request.app.state.admission


def _pool(request: Request) -> asyncpg.Pool:
    return request.app.state.pool


def _publisher(request: Request) -> Publisher:
    return request.app.state.publisher


def _settings(request: Request) -> Settings:
    return request.app.state.settings


def _embedder(request: Request) -> Embedder:
    return request.app.state.embedder


def _optional_llm(request: Request) -> LLMClient | None:
    return request.app.state.llm


def _llm(request: Request) -> LLMClient:
    if request.app.state.llm is None:
        raise NotConfigured(
            "no LLM is configured on this server: reflect needs one (set TEMPR_LLM_BASE_URL and "
            "TEMPR_LLM_MODEL); retain and recall work without it"
        )
    return request.app.state.llm


def _offset(offset: int = Query(0, ge=0, description="Rows to skip (at most TEMPR_MAX_OFFSET).")) -> int:
    # Configurable, so checked here rather than as a bound fixed in the OpenAPI schema; past
    # a bigint it would fail in Postgres instead of here.
    if offset > limits().max_offset:
        raise RequestValidationError(
            [
                {
                    "type": "less_than_equal",
                    "loc": ("query", "offset"),
                    "msg": f"Input should be less than or equal to {limits().max_offset} (TEMPR_MAX_OFFSET)",
                }
            ]
        )
    return offset


AdmissionDep = Annotated[Admission, Depends(_admission)]
PoolDep = Annotated[asyncpg.Pool, Depends(_pool)]
EmbedderDep = Annotated[Embedder, Depends(_embedder)]
PublisherDep = Annotated[Publisher, Depends(_publisher)]
SettingsDep = Annotated[Settings, Depends(_settings)]
LLMDep = Annotated[LLMClient, Depends(_llm)]
OptionalLLMDep = Annotated[LLMClient | None, Depends(_optional_llm)]
BankIdPath = Annotated[
    str,
    Path(
        pattern=BANK_ID_PATTERN,
        description="Bank id: 1-128 characters, letters, digits and . _ : - (not first).",
    ),
]
OffsetQuery = Annotated[int, Depends(_offset)]
DocumentIdPath = Annotated[SafeText, Path(min_length=1, max_length=256)]
