"""Checks on every HTTP request before any route runs: body size, and Host/Origin on loopback.

The Host/Origin rule is the MCP SDK's DNS-rebinding protection (the one `/mcp` gets on a
loopback bind), applied to the whole REST API: a web page the user visits cannot reach a
server bound to 127.0.0.1 by pointing its own domain at that address.
"""

from __future__ import annotations

from mcp.server.transport_security import (
    RequestBodyLimitMiddleware,
    TransportSecurityMiddleware,
    TransportSecuritySettings,
)
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from tempr.keyring import is_loopback

__all__ = ["BodyLimit", "LoopbackOnly", "exposure_warning", "is_loopback"]

_LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")


def exposure_warning(host: str) -> str | None:
    """What to shout when the API listens beyond this machine: it has no access control."""
    if is_loopback(host):
        return None
    return (
        f"the API is bound to {host}, reachable from other machines, and has no API keys: anyone "
        "who can reach it can read, write and delete every bank. Bind to 127.0.0.1 or put it "
        "behind an authenticating proxy."
    )


def _loopback_security() -> TransportSecuritySettings:
    # The SDK's own lists for a loopback bind, plus the port-less forms ("Host: localhost").
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[*_LOOPBACK_NAMES, *(f"{h}:*" for h in _LOOPBACK_NAMES)],
        allowed_origins=[
            *(f"http://{h}" for h in _LOOPBACK_NAMES),
            *(f"http://{h}:*" for h in _LOOPBACK_NAMES),
        ],
    )


class LoopbackOnly:
    """Refuse a Host or Origin that is not loopback (421 / 403), as `/mcp` does."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.security = TransportSecurityMiddleware(_loopback_security())

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            refused = await self.security.validate_request(Request(scope), is_post=False)
            if refused is not None:
                detail = bytes(refused.body).decode() + " (this server is bound to a loopback address)"
                await JSONResponse({"detail": detail}, status_code=refused.status_code)(scope, receive, send)
                return
        await self.app(scope, receive, send)


class BodyLimit:
    """413 for a body over `max_bytes`: by Content-Length at once (JSON naming the setting),
    and for a body sent without one by the SDK's counting middleware as it arrives."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.app = app
        self.counted = RequestBodyLimitMiddleware(app, max_bytes)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if scope["method"] == "POST" and scope["path"].endswith("/import"):
            # A bank import streams any size; its handler bounds each line instead.
            await self.app(scope, receive, send)
            return
        declared = Headers(scope=scope).get("content-length", "")
        if declared.isdigit() and int(declared) > self.max_bytes:
            detail = f"request body larger than TEMPR_MAX_BODY_BYTES ({self.max_bytes} bytes)"
            await JSONResponse({"detail": detail}, status_code=413)(scope, receive, send)
            return
        await self.counted(scope, receive, send)
