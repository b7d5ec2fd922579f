"""Rendering console pages: one Jinja2 environment over the package's templates, and the
context every page shares (who is looking, what they may do, the CSRF token)."""

from __future__ import annotations

import json
from datetime import datetime
from importlib.resources import files
from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse
from fastapi.templating import Jinja2Templates

from tempr.access import Principal, Scope
from tempr.recall_api.console.session import CSRF_FIELD, CSRF_HEADER, csrf_token

__all__ = ["PAGE", "flash", "render", "render_bank_list", "templates"]

templates = Jinja2Templates(directory=str(files("tempr.recall_api.console") / "templates"))


def _when(moment: datetime | None) -> str:
    return "" if moment is None else moment.strftime("%Y-%m-%d %H:%M")


def _day(moment: datetime | None) -> str:
    return "" if moment is None else moment.strftime("%Y-%m-%d")


templates.env.filters["when"] = _when
templates.env.filters["day"] = _day
templates.env.filters["tojson_pretty"] = lambda v: json.dumps(v, indent=2, sort_keys=True, default=str)


def _context(request: Request, **values: Any) -> dict[str, Any]:
    principal: Principal | None = getattr(request.state, "principal", None)
    scopes = principal.scopes if principal is not None else frozenset()
    token = csrf_token(request)
    return {
        "request": request,
        "principal": principal,
        "can": {s.value: s in scopes for s in Scope},
        "csrf_field": CSRF_FIELD,
        "csrf": token,
        "hx_headers": json.dumps({CSRF_HEADER: token}),
        "auth_required": request.app.state.settings.auth_required,
        **values,
    }


PAGE = 50  # rows of a paged list


def render_bank_list(
    request: Request, section: str, bank_id: str, rows: Any, total: int, offset: int
) -> HTMLResponse:
    """One page of a bank's paged list (entities, documents, opinions): `<section>.html`."""
    return render(
        request,
        f"{section}.html",
        bank_id=bank_id,
        section=section,
        rows=rows,
        total=total,
        offset=offset,
        page=PAGE,
        query="",
    )


def render(request: Request, name: str, status_code: int = 200, **values: Any) -> HTMLResponse:
    """A page, or a fragment (templates named ``_*.html``) that htmx swaps into one."""
    return templates.TemplateResponse(request, name, _context(request, **values), status_code=status_code)


def flash(request: Request, status_code: int, message: str) -> HTMLResponse:
    """What happened (or why not), as the fragment htmx puts where the action was."""
    kind = "ok" if status_code < 400 else "error"
    return render(request, "_flash.html", status_code=status_code, kind=kind, message=message)
