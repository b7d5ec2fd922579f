"""ASGI: after an admin request is answered, its audit row (who, what, when, bank, status).

`authorize` marks a request as an admin action; the row is written here because only the
answer tells how the action ended. A failure to write it is logged, never turned into an error
for a request that is already answered.
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
        status: dict[str, int] = {}

        async def capture(message: Message) -> None:
            if message["type"] == "http.response.start":
                status["code"] = message["status"]
            await send(message)

        await self.app(scope, receive, capture)
        entry = scope.get("state", {}).get("audit")
        if entry is None:
            return
        try:
            await record_audit(
                scope["app"].state.pool,
                actor=entry["actor"],
                action=entry["action"],
                bank_id=entry["bank"],
                status=status.get("code"),
                detail=entry.get("detail"),
            )
        except Exception as exc:
            log.error("could not write the audit row %s: %r", entry, exc)
