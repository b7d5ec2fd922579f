"""Who may call which route on which bank: one dependency on every router, one policy table.

Every route is listed in `POLICY` with the scope it needs; a route missing from the table is
refused (fail closed), and a test checks the table against the app's routes. The bank is the
route's `{bank_id}`: a key that may not see it gets 403 whether or not the bank exists, so
neither 401 nor 403 tells a caller anything about other tenants.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

from fastapi import Depends, HTTPException, Request
from starlette.types import ASGIApp, Receive, Scope, Send

from tempr.access import OPEN, Principal
from tempr.access import Scope as KeyScope
from tempr.keyring import authenticate
from tempr.recall_api.mcp_server import FORWARDED_AUTHORIZATION
from tempr.recall_api.rate_limit import RateLimiter

__all__ = [
    "CONSOLE_COOKIE",
    "CONSOLE_PREFIX",
    "FORWARDED_AUTHORIZATION",
    "POLICY",
    "McpAuth",
    "PrincipalDep",
    "Rule",
    "authorize",
    "principal_of",
]

Limit = Literal["retain", "recall"]


@dataclass(frozen=True)
class Rule:
    scope: KeyScope | None  # None: open to anyone (health)
    every_bank: bool = False  # the key must reach every bank ('*'): keys, audit, metrics
    limit: Limit | None = None
    audit: bool = False  # a write below admin that still leaves an audit row (forget, correct)


_R, _W, _A = KeyScope.READ, KeyScope.WRITE, KeyScope.ADMIN
_B = "/v1/banks/{bank_id}"

# The console (recall_api/console): a browser presents its key in this cookie, sent only to
# the console's paths (the REST API never reads it, so it cannot be used to forge API calls).
CONSOLE_PREFIX = "/console"
CONSOLE_COOKIE = "tempr_console_key"
_C = CONSOLE_PREFIX
_CB = f"{_C}/banks/{{bank_id}}"

POLICY: dict[tuple[str, str], Rule] = {
    ("GET", "/health"): Rule(None),
    ("GET", "/metrics"): Rule(_A, every_bank=True),
    ("GET", "/v1/banks"): Rule(_R),  # lists only the banks the key sees
    ("GET", _B): Rule(_R),
    ("PUT", _B): Rule(_A),
    ("PATCH", _B): Rule(_A),
    ("DELETE", _B): Rule(_A),
    ("GET", f"{_B}/stats"): Rule(_R),
    ("POST", f"{_B}/memories"): Rule(_W, limit="retain"),
    ("GET", f"{_B}/memories"): Rule(_R),
    ("GET", f"{_B}/memories/{{memory_id}}"): Rule(_R),
    # Forgetting and correcting change what the bank holds, like retain: write. They cannot be
    # undone, so each leaves an audit row naming what it touched.
    ("PATCH", f"{_B}/memories/{{memory_id}}"): Rule(_W, audit=True),
    ("DELETE", f"{_B}/memories/{{memory_id}}"): Rule(_W, audit=True),
    ("DELETE", f"{_B}/messages/{{message_id}}"): Rule(_W, audit=True),
    ("DELETE", f"{_B}/conversations/{{conversation_id}}"): Rule(_W, audit=True),
    ("POST", f"{_B}/recall"): Rule(_R, limit="recall"),
    ("POST", f"{_B}/reflect"): Rule(_W),  # forms opinions
    ("GET", f"{_B}/entities"): Rule(_R),
    ("GET", f"{_B}/entities/{{entity_id}}"): Rule(_R),
    ("GET", f"{_B}/documents"): Rule(_R),
    ("DELETE", f"{_B}/documents/{{document_id}}"): Rule(_W),
    ("GET", f"{_B}/opinions"): Rule(_R),
    ("GET", f"{_B}/opinions/{{opinion_id}}"): Rule(_R),
    ("POST", f"{_B}/replay"): Rule(_A),
    # The whole bank, raw messages and tombstones included (more than any read route shows),
    # and an import writes rows past the pipeline's checks: operators' tools, admin.
    ("GET", f"{_B}/export"): Rule(_A),
    ("POST", f"{_B}/import"): Rule(_A),
    ("GET", "/v1/dead-letters"): Rule(_A),  # lists only letters of banks the key sees
    ("POST", "/v1/dead-letters/{letter_id}/replay"): Rule(_A),  # the letter's bank checked there
    ("GET", "/v1/keys"): Rule(_A, every_bank=True),
    ("POST", "/v1/keys"): Rule(_A, every_bank=True),
    ("DELETE", "/v1/keys/{key}"): Rule(_A, every_bank=True),
    ("GET", "/v1/audit"): Rule(_A),  # rows of the banks the key sees
    # The console: the same scopes as the REST routes it shows or calls.
    ("GET", _C): Rule(None),  # redirects to the banks, or to the login
    ("GET", f"{_C}/login"): Rule(None),
    ("POST", f"{_C}/login"): Rule(None),  # checks the key it is given
    ("POST", f"{_C}/logout"): Rule(None),
    ("GET", f"{_C}/static/{{name}}"): Rule(None),  # the vendored scripts and the style sheet
    ("GET", f"{_C}/banks"): Rule(_R),  # lists only the banks the key sees
    ("POST", f"{_C}/banks"): Rule(_A),  # create: the bank id is checked there
    ("GET", _CB): Rule(_R),
    ("POST", f"{_CB}/profile"): Rule(_A),
    ("POST", f"{_CB}/delete"): Rule(_A),
    ("GET", f"{_CB}/memories"): Rule(_R),
    ("GET", f"{_CB}/memories/{{unit_id}}"): Rule(_R),
    ("POST", f"{_CB}/memories/{{unit_id}}/forget"): Rule(_W, audit=True),
    ("POST", f"{_CB}/memories/{{unit_id}}/correct"): Rule(_W, audit=True),
    ("GET", f"{_CB}/recall"): Rule(_R),
    ("POST", f"{_CB}/recall"): Rule(_R, limit="recall"),
    ("GET", f"{_CB}/documents"): Rule(_R),
    ("POST", f"{_CB}/documents/{{document_id}}/delete"): Rule(_W),
    ("GET", f"{_CB}/entities"): Rule(_R),
    ("GET", f"{_CB}/entities/{{entity_id}}"): Rule(_R),
    ("GET", f"{_CB}/graph"): Rule(_R),
    ("GET", f"{_CB}/graph/data"): Rule(_R),
    ("GET", f"{_CB}/reflect"): Rule(_R),
    ("POST", f"{_CB}/reflect"): Rule(_W),  # forms opinions
    ("GET", f"{_CB}/opinions"): Rule(_R),
    ("GET", f"{_CB}/opinions/{{opinion_id}}"): Rule(_R),
    ("GET", f"{_C}/pipeline"): Rule(_A),  # dead letters and pending of the banks the key sees
    ("POST", f"{_C}/dead-letters/{{letter_id}}/replay"): Rule(_A),  # the letter's bank checked there
    ("POST", f"{_C}/dead-letters/replay-all"): Rule(_A),
}


def _unauthorized(detail: str) -> HTTPException:
    return HTTPException(401, detail, headers={"WWW-Authenticate": "Bearer"})


async def principal_of(request: Request) -> Principal:
    """The caller: OPEN in open mode, else the key in `Authorization: Bearer` (401 if none)."""
    cached = getattr(request.state, "principal", None)
    if cached is not None:
        return cached
    app_state = request.app.state
    if not app_state.settings.auth_required:
        principal = OPEN
    else:
        header = request.headers.get("authorization", "")
        scheme, _, token = header.partition(" ")
        if not header and request.url.path.startswith(CONSOLE_PREFIX):
            scheme, token = "bearer", request.cookies.get(CONSOLE_COOKIE, "")
        if scheme.lower() != "bearer" or not token.strip():
            raise _unauthorized("an API key is required: send 'Authorization: Bearer <key>'")
        found = await authenticate(app_state.pool, token.strip(), app_state.pepper)
        if found is None:
            raise _unauthorized("the API key is not valid (unknown, revoked or expired)")
        principal = found
    request.state.principal = principal
    return principal


def _limiter(request: Request) -> RateLimiter:
    return request.app.state.rate_limiter


async def authorize(request: Request) -> None:
    """The dependency every router carries."""
    route = request.scope.get("route")
    template = getattr(route, "path", request.url.path)
    rule = POLICY.get((request.method, template))
    if rule is None:
        raise HTTPException(403, f"no access rule for {request.method} {template}")
    if rule.scope is None:
        return
    principal = await principal_of(request)
    if not principal.has(rule.scope):
        raise HTTPException(403, f"this key lacks the {rule.scope.value!r} scope")
    if rule.every_bank and not principal.all_banks:
        raise HTTPException(403, "this needs a key for every bank ('*')")
    bank_id = request.path_params.get("bank_id")
    if bank_id is not None and not principal.sees(bank_id):
        raise HTTPException(403, f"this key may not use bank {bank_id!r}")
    if rule.limit is not None:
        wait = _limiter(request).take(principal, rule.limit)
        if wait is not None:
            raise HTTPException(
                429,
                f"rate limit of this key for {rule.limit} reached; retry in {wait:.1f}s",
                headers={"Retry-After": str(max(1, round(wait + 0.5)))},
            )
    if (rule.scope is KeyScope.ADMIN or rule.audit) and request.method != "GET":  # reads are not actions
        request.state.audit = {
            "actor": principal.name,
            "action": f"{request.method} {template}",
            "bank": bank_id,
        }
        if rule.audit:  # which fact, message or conversation
            request.state.audit["detail"] = {
                k: str(v) for k, v in request.path_params.items() if k != "bank_id"
            }


PrincipalDep = Annotated[Principal, Depends(principal_of)]


class McpAuth:
    """ASGI: `/mcp` (a plain Starlette route, outside FastAPI's dependencies) needs a valid key.

    The MCP tools call the API in-process; FORWARDED_AUTHORIZATION carries the caller's own key
    to every route a tool calls, so each tool is checked with the caller's scopes and banks."""

    def __init__(self, app: ASGIApp, path: str) -> None:
        self.app = app
        self.path = path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"].rstrip("/") != self.path:
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        try:
            await principal_of(request)
        except HTTPException as exc:
            await _json_error(send, exc)
            return
        token = FORWARDED_AUTHORIZATION.set(request.headers.get("authorization"))
        try:
            await self.app(scope, receive, send)
        finally:
            FORWARDED_AUTHORIZATION.reset(token)


async def _json_error(send: Send, exc: HTTPException) -> None:
    import json

    body = json.dumps({"detail": exc.detail}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    headers += [(k.lower().encode(), v.encode()) for k, v in (exc.headers or {}).items()]
    await send({"type": "http.response.start", "status": exc.status_code, "headers": headers})
    await send({"type": "http.response.body", "body": body})
