"""The console: server-rendered pages (Jinja2 + htmx) at /console, under the API's own keys."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from urllib.parse import urlencode, urlsplit

from fastapi import FastAPI, Request
from fastapi.exception_handlers import http_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import RedirectResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from tempr.errors import TemprError
from tempr.recall_api.auth import CONSOLE_PREFIX
from tempr.recall_api.console import (
    pages_auth,
    pages_banks,
    pages_graph,
    pages_memories,
    pages_pipeline,
    pages_recall,
    pages_reflect,
)
from tempr.recall_api.console.render import render
from tempr.recall_api.errors import STATUS_BY_ERROR

__all__ = ["ROUTERS", "install_console"]

_TITLES = {
    401: "Log in needed",
    403: "Not allowed",
    404: "Not found",
    409: "Conflict",
    422: "Not valid",
    429: "Slow down",
}


def _console_error(request: Request, status: int, detail: str, headers: Mapping[str, str] | None) -> Response:
    if status == 401:
        # Back to the page the user was on: for htmx the page that made the request, never
        # the address of a POST.
        page = urlsplit(request.headers.get("hx-current-url", "")).path
        here = page or (request.url.path if request.method == "GET" else "/console/banks")
        target = f"/console/login?{urlencode({'next': here})}"
        if request.headers.get("hx-request"):
            return Response(status_code=200, headers={"HX-Redirect": target})
        return RedirectResponse(target, status_code=303)
    if request.headers.get("hx-request"):
        return render(request, "_flash.html", status_code=status, kind="error", message=f"{status}: {detail}")
    response = render(
        request,
        "error.html",
        status_code=status,
        status=status,
        title=_TITLES.get(status, "Error"),
        detail=detail,
    )
    for name, value in (headers or {}).items():
        response.headers[name] = value
    return response


ROUTERS = [
    m.router
    for m in (
        pages_auth,
        pages_banks,
        pages_memories,
        pages_recall,
        pages_graph,
        pages_reflect,
        pages_pipeline,
    )
]


def install_console(app: FastAPI) -> None:
    for router in ROUTERS:
        app.include_router(router)
    tempr_error: Callable[[Request, Exception], Awaitable[Response]] = app.exception_handlers[TemprError]  # type: ignore[assignment]

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException) -> Response:
        if not request.url.path.startswith(CONSOLE_PREFIX):
            return await http_exception_handler(request, exc)
        return _console_error(request, exc.status_code, str(exc.detail), exc.headers)

    invalid: Callable[[Request, Exception], Awaitable[Response]] = app.exception_handlers[
        RequestValidationError
    ]  # type: ignore[assignment]

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> Response:
        if not request.url.path.startswith(CONSOLE_PREFIX):
            return await invalid(request, exc)
        fields = "; ".join(
            f"{'.'.join(str(p) for p in e.get('loc', ())[1:]) or 'input'}: {e.get('msg', 'invalid')}"
            for e in exc.errors()
        )
        return _console_error(request, 422, fields, None)

    @app.exception_handler(TemprError)
    async def _tempr_error(request: Request, exc: TemprError) -> Response:
        if not request.url.path.startswith(CONSOLE_PREFIX):
            return await tempr_error(request, exc)
        status = next((s for cls, s in STATUS_BY_ERROR.items() if isinstance(exc, cls)), 500)
        return _console_error(request, status, str(exc), None)
