"""Dependencies injected into routes: the pool, the publisher, the settings."""

from __future__ import annotations

from typing import Annotated

import asyncpg
from fastapi import Depends, Path, Request

from tempr.errors import NotConfigured
from tempr.inference.embeddings import Embedder
from tempr.inference.llm import LLMClient
from tempr.schemas.ids import BANK_ID_PATTERN
from tempr.settings import Settings
from tempr.streams.publisher import Publisher

__all__ = ["BankIdPath", "EmbedderDep", "LLMDep", "OptionalLLMDep", "PoolDep", "PublisherDep", "SettingsDep"]


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
