"""A real HTTP server speaking the OpenAI chat-completions protocol, scripted by the test.

    with ScriptedLLMServer() as server:
        server.script(status(429), reply_json({"facts": []}))
        settings = Settings(llm_base_url=server.base_url, llm_model="m")
        ...
        assert server.requests[0]["response_format"]["type"] == "json_schema"

Each request pops the next action of the queue; when the queue is empty the default responder
(request body -> action, dict or str) answers. The server runs uvicorn in a daemon thread on
127.0.0.1 and a free port, so the real `openai` client is exercised end to end (HTTP, status
codes, timeouts).
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Self, TypeAlias

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

__all__ = [
    "Action",
    "Responder",
    "ScriptedLLMServer",
    "delay",
    "reject_json_schema",
    "reply_json",
    "reply_text",
    "schema_name",
    "status",
]


@dataclass(frozen=True)
class _Reply:
    content: str
    finish_reason: str = "stop"


@dataclass(frozen=True)
class _Status:
    code: int
    message: str
    error_type: str
    param: str | None = None
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class _Delay:
    seconds: float
    then: Action | None = None


Action: TypeAlias = _Reply | _Status | _Delay
Responder: TypeAlias = Callable[[dict[str, Any]], Action | dict[str, Any] | list[Any] | str]


def schema_name(body: dict[str, Any]) -> str | None:
    """Which structured call a request is (`response_format.json_schema.name`), if it says."""
    fmt = body.get("response_format") or {}
    return (fmt.get("json_schema") or {}).get("name") if isinstance(fmt, dict) else None


def reply_json(obj: Any) -> Action:
    """Answer with `obj` serialized as the assistant message content."""
    return _Reply(json.dumps(obj))


def reply_text(text: str, *, finish_reason: str = "stop") -> Action:
    return _Reply(text, finish_reason)


def status(code: int, message: str | None = None, *, retry_after: float | None = None) -> Action:
    """Answer with an OpenAI-style error body and HTTP status `code`."""
    headers = {"retry-after": str(retry_after)} if retry_after is not None else {}
    return _Status(code, message or f"scripted status {code}", _error_type(code), headers=headers)


def _error_type(code: int) -> str:
    if code == 429:
        return "rate_limit_error"
    return "server_error" if code >= 500 else "invalid_request_error"


def delay(seconds: float, then: Action | None = None) -> Action:
    """Wait before answering with `then` (or the default responder): triggers client timeouts."""
    return _Delay(seconds, then)


def reject_json_schema() -> Action:
    """What servers without structured-output support answer to a json_schema request."""
    return _Status(
        400,
        "Invalid parameter: 'response_format' of type 'json_schema' is not supported with this model.",
        "invalid_request_error",
        param="response_format",
    )


def _exhausted(_: dict[str, Any]) -> Action:
    return _Status(418, "ScriptedLLMServer: no scripted reply left", "invalid_request_error")


class ScriptedLLMServer:
    """Context manager running the scripted server; see the module docstring."""

    def __init__(
        self,
        *,
        default: Responder | None = None,
        supports_json_schema: bool = True,
    ) -> None:
        self.default: Responder = _exhausted
        # When False, every json_schema request is rejected without consuming the queue.
        self.supports_json_schema = True
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self._queue: deque[Action] = deque()
        self.reset(default=default, supports_json_schema=supports_json_schema)
        self._stopping = threading.Event()
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._port = 0

    # -- scripting ---------------------------------------------------------------------------

    def reset(self, *, default: Responder | None = None, supports_json_schema: bool = True) -> None:
        """Forget the script and the recorded requests, so one server can serve many tests."""
        self.default = default or _exhausted
        self.supports_json_schema = supports_json_schema
        self._queue.clear()
        self.requests.clear()
        self.headers.clear()

    def script(self, *actions: Action) -> None:
        self._queue.extend(actions)

    @property
    def pending(self) -> int:
        return len(self._queue)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._port}/v1"

    @property
    def last_request(self) -> dict[str, Any]:
        return self.requests[-1]

    # -- lifecycle ---------------------------------------------------------------------------

    def __enter__(self) -> Self:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        self._port = sock.getsockname()[1]
        config = uvicorn.Config(self._app(), log_level="warning", lifespan="off", timeout_graceful_shutdown=2)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [sock]}, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("ScriptedLLMServer did not start")
            time.sleep(0.01)
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stopping.set()
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)

    # -- HTTP --------------------------------------------------------------------------------

    def _app(self) -> Starlette:
        return Starlette(
            routes=[
                Route("/v1/chat/completions", self._chat_completions, methods=["POST"]),
                Route("/v1/models", self._models, methods=["GET"]),
            ]
        )

    async def _models(self, _: Request) -> JSONResponse:
        return JSONResponse(
            {
                "object": "list",
                "data": [{"id": "scripted", "object": "model", "created": 0, "owned_by": "tests"}],
            }
        )

    async def _chat_completions(self, request: Request) -> JSONResponse:
        body = await request.json()
        self.requests.append(body)
        self.headers.append(dict(request.headers))
        action = self._next_action(body)
        while isinstance(action, _Delay):
            await self._sleep(request, action.seconds)
            action = action.then or _coerce(self.default(body))
        if isinstance(action, _Status):
            return _error_response(action)
        return JSONResponse(_completion(body, action))

    def _next_action(self, body: dict[str, Any]) -> Action:
        if not self.supports_json_schema and _wants_json_schema(body):
            return reject_json_schema()
        if self._queue:
            return self._queue.popleft()
        return _coerce(self.default(body))

    async def _sleep(self, request: Request, seconds: float) -> None:
        # Stop early when the client gave up or the server stops, so shutdown stays fast.
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and not self._stopping.is_set():
            if await _disconnected(request):
                return
            await asyncio.sleep(0.02)


async def _disconnected(request: Request) -> bool:
    try:
        return await asyncio.wait_for(request.is_disconnected(), timeout=0.01)
    except TimeoutError:
        return False


def _coerce(reply: Action | dict[str, Any] | list[Any] | str) -> Action:
    if isinstance(reply, (_Reply, _Status, _Delay)):
        return reply
    if isinstance(reply, str):
        return reply_text(reply)
    return reply_json(reply)


def _wants_json_schema(body: dict[str, Any]) -> bool:
    fmt = body.get("response_format") or {}
    return isinstance(fmt, dict) and fmt.get("type") == "json_schema"


def _error_response(action: _Status) -> JSONResponse:
    error = {
        "message": action.message,
        "type": action.error_type,
        "param": action.param,
        "code": None,
    }
    return JSONResponse({"error": error}, status_code=action.code, headers=action.headers)


def _completion(body: dict[str, Any], reply: _Reply) -> dict[str, Any]:
    prompt_tokens = sum(len(str(m.get("content", "")).split()) for m in body.get("messages", []))
    completion_tokens = len(reply.content.split())
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", "scripted"),
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": reply.content, "refusal": None},
                "logprobs": None,
                "finish_reason": reply.finish_reason,
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }
