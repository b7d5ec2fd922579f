"""The one place where errors become HTTP status codes.

Besides tempr's own errors: a database that cannot be reached (or a transaction Postgres
aborted to break a deadlock) is 503 with Retry-After, which clients retry, never a 500; a
validation error is 422 without echoing the offending input, which may be exactly what JSON
cannot carry (NaN, a lone surrogate); anything else is a JSON 500.
"""

from __future__ import annotations

import logging

import asyncpg
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from tempr.errors import (
    Conflict,
    ConsistencyTimeout,
    InvalidRequest,
    NotConfigured,
    NotFound,
    TemprError,
    UpstreamLLMError,
    UpstreamModelError,
)

__all__ = ["RETRY_AFTER_S", "STATUS_BY_ERROR", "UNAVAILABLE", "install_error_handlers"]

log = logging.getLogger(__name__)

STATUS_BY_ERROR: dict[type[TemprError], int] = {
    NotFound: 404,
    InvalidRequest: 400,
    Conflict: 409,
    ConsistencyTimeout: 504,
    NotConfigured: 501,
    UpstreamLLMError: 502,
    UpstreamModelError: 502,
}

# The database is down or restarting, or a transaction lost a deadlock or a serialization race:
# the same request can succeed shortly.
UNAVAILABLE: tuple[type[BaseException], ...] = (
    OSError,  # ConnectionRefusedError, ConnectionResetError, socket errors
    TimeoutError,  # no pool connection in time
    asyncpg.PostgresConnectionError,
    asyncpg.InterfaceError,  # "connection is closed", "pool is closing"
    asyncpg.CannotConnectNowError,
    asyncpg.AdminShutdownError,
    asyncpg.CrashShutdownError,
    asyncpg.DeadlockDetectedError,
    asyncpg.SerializationError,
    asyncpg.TooManyConnectionsError,
)
RETRY_AFTER_S = 2


def _errors(exc: RequestValidationError) -> list[dict[str, object]]:
    return [
        {"loc": list(e.get("loc", ())), "msg": str(e.get("msg", "")), "type": str(e.get("type", ""))}
        for e in exc.errors()
    ]


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(TemprError)
    async def _tempr_error(_: Request, exc: TemprError) -> JSONResponse:
        status = next((s for cls, s in STATUS_BY_ERROR.items() if isinstance(exc, cls)), 500)
        return JSONResponse(status_code=status, content={"detail": str(exc)})

    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        return JSONResponse(status_code=422, content={"detail": _errors(exc)})

    @app.exception_handler(RecursionError)
    async def _too_deep(_: Request, exc: RecursionError) -> JSONResponse:
        return JSONResponse(status_code=422, content={"detail": "the request body is nested too deeply"})

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        if isinstance(exc, UNAVAILABLE):
            log.warning("%s %s: database unavailable: %r", request.method, request.url.path, exc)
            return JSONResponse(
                status_code=503,
                content={"detail": f"the database is unavailable, retry shortly ({type(exc).__name__})"},
                headers={"Retry-After": str(RETRY_AFTER_S)},
            )
        log.exception("%s %s failed", request.method, request.url.path)
        return JSONResponse(status_code=500, content={"detail": f"internal error ({type(exc).__name__})"})
