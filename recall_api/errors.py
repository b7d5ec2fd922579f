"""The one place where tempr's errors become HTTP status codes."""

from __future__ import annotations

from fastapi import FastAPI, Request
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

__all__ = ["STATUS_BY_ERROR", "install_error_handlers"]

STATUS_BY_ERROR: dict[type[TemprError], int] = {
    NotFound: 404,
    InvalidRequest: 400,
    Conflict: 409,
    ConsistencyTimeout: 504,
    NotConfigured: 501,
    UpstreamLLMError: 502,
    UpstreamModelError: 502,
}


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(TemprError)
    async def _tempr_error(_: Request, exc: TemprError) -> JSONResponse:
        status = next((s for cls, s in STATUS_BY_ERROR.items() if isinstance(exc, cls)), 500)
        return JSONResponse(status_code=status, content={"detail": str(exc)})
