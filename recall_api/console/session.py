"""How a browser holds its key, and the CSRF check of every form that changes something.

The key a user types on the login page is kept in an HttpOnly, SameSite=Strict cookie scoped
to /console: page scripts cannot read it, other sites cannot make the browser send it, and the
REST API never reads it (auth.principal_of takes it only on console paths). Every state-changing
console request must also carry a token derived from that cookie with the server's pepper
(HMAC): a page on another origin can neither read it nor compute it. In open mode (no keys, on
loopback only) the token is derived from the pepper alone.
"""

from __future__ import annotations

import hashlib
import hmac

from fastapi import HTTPException, Request
from fastapi.responses import Response

from tempr.recall_api.auth import CONSOLE_COOKIE, CONSOLE_PREFIX

__all__ = ["CSRF_FIELD", "CSRF_HEADER", "check_csrf", "csrf_token", "forget_key", "remember_key"]

CSRF_FIELD = "csrf"
CSRF_HEADER = "x-csrf-token"


def _identity(request: Request) -> str:
    return request.cookies.get(CONSOLE_COOKIE) or "open"


def csrf_token(request: Request) -> str:
    pepper: bytes = request.app.state.pepper
    return hmac.new(pepper, b"tempr-console-csrf\0" + _identity(request).encode(), hashlib.sha256).hexdigest()


async def check_csrf(request: Request) -> None:
    """A dependency of every console route that changes data."""
    sent = request.headers.get(CSRF_HEADER)
    if sent is None:
        form = await request.form()
        value = form.get(CSRF_FIELD)
        sent = value if isinstance(value, str) else None
    if sent is None or not hmac.compare_digest(sent, csrf_token(request)):
        raise HTTPException(403, "the form's CSRF token is missing or stale: reload the page and try again")


def remember_key(response: Response, request: Request, key: str) -> None:
    response.set_cookie(
        CONSOLE_COOKIE,
        key,
        path=CONSOLE_PREFIX,
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )


def forget_key(response: Response) -> None:
    response.delete_cookie(CONSOLE_COOKIE, path=CONSOLE_PREFIX, httponly=True, samesite="strict")
