"""The FastAPI application: resources opened in `lifespan`, routes mounted by resource."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import Depends, FastAPI
from starlette.types import ASGIApp, Receive, Scope, Send

from tempr import __version__
from tempr.inference.embeddings import embedder_from_settings, set_torch_threads
from tempr.inference.llm import LLMClient
from tempr.inference.tokens import get_encoding
from tempr.keyring import bootstrap_admin_key, check_exposure, load_pepper
from tempr.recall_api.admission import Admission
from tempr.recall_api.audit_log import AuditLog
from tempr.recall_api.auth import McpAuth, authorize
from tempr.recall_api.console import install_console
from tempr.recall_api.errors import install_error_handlers
from tempr.recall_api.guards import BodyLimit, LoopbackOnly, is_loopback
from tempr.recall_api.index_maintenance import maintenance_loop
from tempr.recall_api.mcp_server import MCP_PATH, mcp_lifespan, mount_mcp
from tempr.recall_api.metrics import ApiMetrics
from tempr.recall_api.rate_limit import RateLimiter
from tempr.recall_api.recall.inflections import load_lexicon
from tempr.recall_api.recall.word_prior import load_word_prior
from tempr.recall_api.routes import (
    bank_transfer,
    banks,
    corrections,
    dead_letters,
    documents,
    entities,
    forget,
    health,
    keys,
    memories,
    metrics,
    opinions,
    recall,
    reflect,
    replay,
)
from tempr.recall_api.time_limits import TimeLimits
from tempr.settings import Settings, get_settings
from tempr.store.embedding_column import check_embedding_model
from tempr.store.pool import create_pool
from tempr.streams.admin import ensure_topics
from tempr.streams.broker_features import detect_features
from tempr.streams.control import control_key
from tempr.streams.embedded import die_with_parent
from tempr.streams.group_lag import GroupLag
from tempr.streams.heap import freeze_start_up_heap
from tempr.streams.kafka_security import kafka_client_options
from tempr.streams.publisher import Publisher, start_producer
from tempr.streams.topics import ALL_TOPICS, WORKER_GROUP

__all__ = ["create_app", "create_worker_app"]

log = logging.getLogger(__name__)


class _Metrics:
    """Adapter: Starlette builds middleware from a class and keyword arguments."""

    def __init__(self, app: ASGIApp, metrics: ApiMetrics) -> None:
        self.app = metrics.asgi_middleware(app)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.app(scope, receive, send)


def create_worker_app() -> FastAPI:
    """The app of one of several uvicorn workers (`tempr api --workers N`). A worker dies with
    the process that started it, so a killed API leaves no worker holding its port."""
    die_with_parent()
    return create_app()


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or get_settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        assert settings.database_url, "the API needs TEMPR_DATABASE_URL"
        check_exposure(settings)
        pool = await create_pool(settings.database_url)
        app.state.pepper = load_pepper(settings)
        app.state.rate_limiter = RateLimiter(settings)
        if settings.auth_required:
            bootstrap = await bootstrap_admin_key(pool, app.state.pepper)
            if bootstrap is not None:  # a deployment without `tempr up` (compose) reads it in the log
                log.warning("first start with keys: the admin key (shown once) is %s", bootstrap)
        else:
            log.warning(
                "tempr API is OPEN (no API keys): anyone who reaches %s can use every bank", settings.host
            )
        set_torch_threads(settings.api_torch_threads())
        try:
            embedder, *_ = await asyncio.gather(
                asyncio.to_thread(embedder_from_settings, settings),
                asyncio.to_thread(load_lexicon),
                asyncio.to_thread(load_word_prior),
                asyncio.to_thread(get_encoding),  # packing's token counts: not on the first recall
            )
            # A model whose vectors do not fit the column stops start-up with what to do.
            await check_embedding_model(pool, embedder.model_name, embedder.dimension)
            # Retains published before any worker made the topics would wait for the sweeper.
            kafka_options = kafka_client_options(settings)  # SASL and TLS, for every client below
            await ensure_topics(settings.bootstrap, settings.topic_partitions, timeout=120.0, **kafka_options)
            features = await detect_features(settings.bootstrap, **kafka_options)
        except BaseException:
            await pool.close()
            raise
        producer = await start_producer(settings.bootstrap, **(kafka_options | features.producer_options()))
        # The group's own lag only where the broker's end offsets can be trusted (Apache Kafka).
        app.state.group_lag = None
        if features.idempotent_producer:
            app.state.group_lag = GroupLag(
                settings.bootstrap, WORKER_GROUP, [t.name for t in ALL_TOPICS], **kafka_options
            )
            await app.state.group_lag.start()
        app.state.settings = settings
        app.state.admission = Admission(settings.recall_concurrency)
        app.state.pool = pool
        app.state.publisher = Publisher(pool, producer, control_key=control_key(settings))
        app.state.embedder = embedder
        app.state.llm = LLMClient(settings) if settings.llm_configured else None
        maintenance = (
            asyncio.create_task(maintenance_loop(settings)) if settings.index_maintenance_interval_s else None
        )
        # What was loaded above (models, tokenizers, libraries) is ~500k objects that live as
        # long as the process; a full collection walked them all, 2.4 s under load (12 % of the
        # event loop at 16 clients). Frozen, collections walk only what requests allocate.
        freeze_start_up_heap()
        try:
            async with mcp_lifespan(app):
                yield
        finally:
            if maintenance is not None:
                maintenance.cancel()
            if app.state.llm is not None:
                await app.state.llm.aclose()
            if app.state.group_lag is not None:
                await app.state.group_lag.stop()
            await producer.stop()
            await pool.close()

    app = FastAPI(
        title="tempr",
        version=__version__,
        description="Long-term memory for AI agents: retain, recall, reflect.",
        lifespan=lifespan,
        # Every route, whoever adds it, goes through the one access check (recall_api/auth.py).
        dependencies=[Depends(authorize)],
    )
    install_error_handlers(app)
    app.state.metrics = ApiMetrics()
    app.add_middleware(TimeLimits, settings=settings)
    app.add_middleware(AuditLog)
    app.add_middleware(McpAuth, path=MCP_PATH)
    app.add_middleware(_Metrics, metrics=app.state.metrics)
    app.add_middleware(BodyLimit, max_bytes=settings.max_body_bytes)
    if is_loopback(settings.host):
        app.add_middleware(LoopbackOnly)
    app.include_router(health.router)
    app.include_router(metrics.router)
    app.include_router(memories.router)
    app.include_router(corrections.router)
    app.include_router(forget.router)
    app.include_router(bank_transfer.router)
    app.include_router(dead_letters.router)
    app.include_router(entities.router)
    app.include_router(documents.router)
    app.include_router(banks.router)
    app.include_router(recall.router)
    app.include_router(reflect.router)
    app.include_router(opinions.router)
    app.include_router(replay.router)
    app.include_router(keys.router)
    install_console(app)
    mount_mcp(app, host=settings.host)
    return app
