"""ASGI: an admin request's audit row (who, what, when, bank, status), written as its answer
starts, so the caller never sees an answer whose row is not there yet.

`authorize` marks a request as an admin action; the row is written here because only the
answer tells how the action ended. A failure to write it is logged, not turned into an error
for an action that has already happened.
"""

from __future__ import annotations

import logging

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tempr.store.audit import record_audit

__all__ = ["AuditLog"]

log = logging.getLogger(__name__)


class AuditLog:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def record_then_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                entry = scope.get("state", {}).get("audit")
                if entry is not None:
                    await _record(scope, entry, message["status"])
            await send(message)

        await self.app(scope, receive, record_then_send)


async def _record(scope: Scope, entry: dict, status: int) -> None:
    try:
        await record_audit(
            scope["app"].state.pool,
            actor=entry["actor"],
            action=entry["action"],
            bank_id=entry["bank"],
            status=status,
            detail=entry.get("detail"),
        )
    except Exception as exc:
        log.error("could not write the audit row %s: %r", entry, exc)
