"""The console's door: its address, the login with a key, the logout, the static files."""

from __future__ import annotations

from importlib.resources import files
from typing import Annotated

from fastapi import APIRouter, Depends, Form, HTTPException, Request
from fastapi.responses import FileResponse, HTMLResponse, RedirectResponse, Response

from tempr.keyring import authenticate
from tempr.recall_api.console.render import render
from tempr.recall_api.console.session import check_csrf, forget_key, remember_key

__all__ = ["router"]

router = APIRouter(prefix="/console", include_in_schema=False)

_STATIC = files("tempr.recall_api.console") / "static"
_MEDIA = {".js": "text/javascript", ".css": "text/css", ".txt": "text/plain"}


def _safe_next(target: str) -> str:
    # Only back into the console: never a redirect to another site.
    return target if target.startswith("/console/") and not target.startswith("//") else "/console/banks"


@router.get("")
async def home() -> RedirectResponse:
    return RedirectResponse("/console/banks", status_code=303)


@router.get("/login", response_class=HTMLResponse)
async def login_form(request: Request, next: str = "/console/banks") -> HTMLResponse:
    return render(request, "login.html", next=_safe_next(next))


@router.post("/login", response_model=None)
async def login(
    request: Request, key: Annotated[str, Form(max_length=200)], next: Annotated[str, Form()] = ""
) -> Response:
    state = request.app.state
    if state.settings.auth_required:
        principal = await authenticate(state.pool, key.strip(), state.pepper)
        if principal is None:
            return render(
                request,
                "login.html",
                status_code=401,
                next=_safe_next(next),
                error="That key is not valid (unknown, revoked or expired).",
            )
    response = RedirectResponse(_safe_next(next), status_code=303)
    if state.settings.auth_required:
        remember_key(response, request, key.strip())
    return response


@router.post("/logout", dependencies=[Depends(check_csrf)])
async def logout() -> RedirectResponse:
    response = RedirectResponse("/console/login", status_code=303)
    forget_key(response)
    return response


@router.get("/static/{name}")
async def static(name: str) -> FileResponse:
    path = _STATIC / name
    suffix = "." + name.rsplit(".", 1)[-1] if "." in name else ""
    if "/" in name or name.startswith(".") or suffix not in _MEDIA or not path.is_file():
        raise HTTPException(404, f"no static file {name!r}")
    return FileResponse(str(path), media_type=_MEDIA[suffix], headers={"Cache-Control": "max-age=3600"})
