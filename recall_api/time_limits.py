"""ASGI: server-side time limits for recall and reflect (504 past them).

Both answer in one piece at the end, so the limit always strikes before the answer starts;
cancelling the handler cancels its database queries and LLM calls with it.
"""

from __future__ import annotations

import asyncio
import json

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tempr.settings import Settings

__all__ = ["TimeLimits"]


class TimeLimits:
    def __init__(self, app: ASGIApp, settings: Settings) -> None:
        self.app = app
        self.limits = {"recall": settings.recall_timeout_s, "reflect": settings.reflect_timeout_s}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["path"].rstrip("/").rsplit("/", 1)[-1] if scope["type"] == "http" else ""
        limit = self.limits.get(kind) if scope.get("method") == "POST" else None
        if limit is None or not scope["path"].startswith("/v1/banks/"):
            await self.app(scope, receive, send)
            return
        started = False

        async def track(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        deadline = asyncio.timeout(limit)
        try:
            async with deadline:
                await self.app(scope, receive, track)
        except TimeoutError:
            if started or not deadline.expired():
                raise
            body = json.dumps(
                {"detail": f"{kind} took longer than the server's limit of {limit:g}s "
                 f"(TEMPR_{kind.upper()}_TIMEOUT_S)"}
            ).encode()  # fmt: skip
            await send(
                {
                    "type": "http.response.start",
                    "status": 504,
                    "headers": [
                        (b"content-type", b"application/json"),
                        (b"content-length", str(len(body)).encode()),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": body})
