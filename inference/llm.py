"""The LLM client: any OpenAI-compatible chat-completions endpoint through the `openai` package.

The SDK's own retries are off (`max_retries=0`): one loop here decides what is worth retrying
(timeouts, connection errors, 429, 5xx and output that is not valid JSON for the schema) with
jittered exponential backoff, and turns the final failure into `UpstreamLLMError`.

Structured output asks for `response_format={"type": "json_schema", ...}`. Many self-hosted
servers reject it; the first such rejection switches this client to `json_object` with the schema
pasted into the system prompt, for that call and every later one.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import random
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Self, TypeVar

import openai
from openai.types.chat import ChatCompletionMessageParam
from openai.types.chat.completion_create_params import ResponseFormat
from pydantic import BaseModel, ValidationError

from tempr.errors import NotConfigured, UpstreamLLMError
from tempr.settings import Settings

__all__ = ["LLMClient", "RetryPolicy", "TokenUsage", "track_usage"]

T = TypeVar("T", bound=BaseModel)
R = TypeVar("R")

_RETRYABLE_STATUS = frozenset({408, 409, 429})
_MAX_CAUSE_CHARS = 500


@dataclass(frozen=True)
class RetryPolicy:
    """Backoff before retry n (1-based): min(max_delay, base * 2**(n-1)), scaled by jitter."""

    max_retries: int = 3
    base_delay_s: float = 0.5
    max_delay_s: float = 8.0
    jitter: float = 0.5  # the delay is drawn from [delay * (1 - jitter), delay]

    def delay(self, retry: int, retry_after: float | None = None) -> float:
        backoff = min(self.max_delay_s, self.base_delay_s * 2 ** (retry - 1))
        backoff *= 1.0 - self.jitter * random.random()
        if retry_after is not None:
            backoff = max(backoff, min(retry_after, self.max_delay_s))
        return backoff


@dataclass(frozen=True)
class TokenUsage:
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


_usage_sink: contextvars.ContextVar[list[TokenUsage] | None] = contextvars.ContextVar(
    "llm_usage", default=None
)


@contextmanager
def track_usage() -> Iterator[list[TokenUsage]]:
    """Collect the token usage of every call made in this context (task-local, so concurrent
    requests sharing one client do not mix their counts)."""
    sink: list[TokenUsage] = []
    token = _usage_sink.set(sink)
    try:
        yield sink
    finally:
        _usage_sink.reset(token)


class _InvalidOutput(Exception):
    """The model answered, but not with what was asked; worth another try."""


class LLMClient:
    """Chat completions with structured output, retries and one lifecycle (`async with`)."""

    def __init__(
        self,
        settings: Settings,
        *,
        retry: RetryPolicy | None = None,
        client: openai.AsyncOpenAI | None = None,
    ) -> None:
        if not settings.llm_configured:
            raise NotConfigured("no LLM configured (set TEMPR_LLM_BASE_URL and TEMPR_LLM_MODEL)")
        self.model: str = settings.llm_model or ""
        self.timeout_s = settings.llm_timeout_s
        self.retry = retry or RetryPolicy(max_retries=settings.llm_max_retries)
        self._client = client or openai.AsyncOpenAI(
            base_url=settings.llm_base_url,
            api_key=settings.llm_api_key.get_secret_value(),
            timeout=settings.llm_timeout_s,
            max_retries=0,
        )
        self.json_schema_supported = True
        self.last_usage: TokenUsage | None = None

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._client.close()

    # -- public calls ------------------------------------------------------------------------

    async def complete_structured(
        self, *, system: str, user: str, response_model: type[T], schema_name: str
    ) -> T:
        """One JSON object validated as `response_model`; raises `UpstreamLLMError`."""
        schema = response_model.model_json_schema()

        async def attempt(feedback: str | None) -> T:
            content = await self._structured_call(system, _with_feedback(user, feedback), schema, schema_name)
            return _parse(content, response_model)

        return await self._with_retries(attempt, what=f"structured call {schema_name!r}")

    async def complete_with_schema(
        self,
        *,
        system: str,
        user: str,
        schema: dict[str, Any],
        schema_name: str,
        parse: Callable[[str], R],
    ) -> R:
        """Structured output against a raw JSON schema; `parse` turns the text into the result
        and raises `ValueError` (which gets the model another try) when it does not fit."""

        async def attempt(feedback: str | None) -> R:
            content = await self._structured_call(system, _with_feedback(user, feedback), schema, schema_name)
            try:
                return parse(_strip_fences(content))
            except ValueError as exc:
                raise _InvalidOutput(f"invalid answer: {_clip(str(exc), 300)}") from exc

        return await self._with_retries(attempt, what=f"structured call {schema_name!r}")

    async def complete_text(self, *, system: str, user: str) -> str:
        """Free text; raises `UpstreamLLMError`."""

        async def attempt(_: str | None) -> str:
            return await self._create(_messages(system, user))

        return await self._with_retries(attempt, what="text call")

    # -- one attempt -------------------------------------------------------------------------

    async def _structured_call(self, system: str, user: str, schema: dict[str, Any], schema_name: str) -> str:
        if self.json_schema_supported:
            fmt: ResponseFormat = {
                "type": "json_schema",
                "json_schema": {"name": schema_name, "schema": schema, "strict": False},
            }
            try:
                return await self._create(_messages(system, user), response_format=fmt)
            except openai.APIStatusError as exc:
                if not _rejects_json_schema(exc):
                    raise
                self.json_schema_supported = False
        return await self._create(
            _messages(_with_schema(system, schema), user), response_format={"type": "json_object"}
        )

    async def _create(
        self,
        messages: list[ChatCompletionMessageParam],
        response_format: ResponseFormat | openai.Omit = openai.omit,
    ) -> str:
        completion = await self._client.chat.completions.create(
            model=self.model, messages=messages, response_format=response_format
        )
        usage = completion.usage
        self.last_usage = (
            TokenUsage(usage.prompt_tokens, usage.completion_tokens, usage.total_tokens)
            if usage is not None
            else None
        )
        sink = _usage_sink.get()
        if sink is not None and self.last_usage is not None:
            sink.append(self.last_usage)
        if not completion.choices:
            raise _InvalidOutput("the response has no choices")
        choice = completion.choices[0]
        if choice.finish_reason == "length":
            raise _InvalidOutput("the output was truncated (finish_reason=length)")
        content = choice.message.content
        if not content or not content.strip():
            refusal = getattr(choice.message, "refusal", None)
            raise _InvalidOutput(f"refusal: {refusal}" if refusal else "empty content")
        return content

    # -- retry loop --------------------------------------------------------------------------

    async def _with_retries(self, attempt: Callable[[str | None], Awaitable[R]], *, what: str) -> R:
        cause: Exception | None = None
        feedback: str | None = None
        for n in range(self.retry.max_retries + 1):
            if n:
                await asyncio.sleep(self.retry.delay(n, _retry_after(cause)))
            try:
                return await attempt(feedback)
            except _InvalidOutput as exc:
                cause, feedback = exc, str(exc)
            except (openai.APIConnectionError, openai.APIResponseValidationError) as exc:
                cause = exc
            except openai.APIStatusError as exc:
                if not _retryable(exc):
                    raise UpstreamLLMError(f"LLM {what} failed: {self._describe(exc)}") from exc
                cause = exc
            except openai.OpenAIError as exc:
                raise UpstreamLLMError(f"LLM {what} failed: {self._describe(exc)}") from exc
        attempts = self.retry.max_retries + 1
        raise UpstreamLLMError(
            f"LLM {what} failed after {attempts} attempt(s); last cause: {self._describe(cause)}"
        ) from cause

    def _describe(self, exc: Exception | None) -> str:
        if isinstance(exc, openai.APITimeoutError):
            return f"timeout after {self.timeout_s}s"
        if isinstance(exc, openai.APIStatusError):
            return f"HTTP {exc.status_code}: {_clip(_error_message(exc))}"
        if isinstance(exc, openai.APIConnectionError):
            return f"connection error: {_clip(str(exc.__cause__ or exc))}"
        if isinstance(exc, _InvalidOutput):
            return f"invalid output: {_clip(str(exc))}"
        return _clip(f"{type(exc).__name__}: {exc}")


def _messages(system: str, user: str) -> list[ChatCompletionMessageParam]:
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def _with_schema(system: str, schema: dict[str, Any]) -> str:
    return (
        f"{system}\n\nAnswer with one JSON object only (no prose, no code fences) that validates "
        f"against this JSON schema:\n{json.dumps(schema, separators=(',', ':'))}"
    )


def _with_feedback(user: str, feedback: str | None) -> str:
    if feedback is None:
        return user
    return (
        f"{user}\n\nYour previous answer was rejected ({feedback}). "
        "Answer again with one JSON object that follows the schema exactly."
    )


def _parse(content: str, response_model: type[T]) -> T:
    text = _strip_fences(content)
    try:
        return response_model.model_validate_json(text)
    except ValidationError as exc:
        if any(e["type"] == "json_invalid" for e in exc.errors()):
            raise _InvalidOutput(f"bad JSON: {_clip(content, 120)}") from exc
        raise _InvalidOutput(f"validation error: {_summarize(exc)}") from exc


def _strip_fences(content: str) -> str:
    # Models in json_object mode still wrap answers in ```json fences now and then.
    text = content.strip()
    if text.startswith("```"):
        text = text.split("\n", 1)[1] if "\n" in text else ""
        text = text.rsplit("```", 1)[0]
    return text.strip()


def _summarize(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:3]:
        loc = ".".join(str(p) for p in err.get("loc", ())) or "response"
        parts.append(f"{loc}: {err.get('msg')}")
    return "; ".join(parts)


def _rejects_json_schema(exc: openai.APIStatusError) -> bool:
    if exc.status_code == 422:
        return True
    if exc.status_code != 400:
        return False
    text = f"{exc.message} {json.dumps(exc.body, default=str)}".lower()
    return "response_format" in text or "json_schema" in text


def _error_message(exc: openai.APIStatusError) -> str:
    # The SDK hands over the body's `error` object; its message beats "Error code: 429 - {...}".
    body = exc.body
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        return body["message"]
    return exc.message


def _retryable(exc: openai.APIStatusError) -> bool:
    return exc.status_code in _RETRYABLE_STATUS or exc.status_code >= 500


def _retry_after(exc: Exception | None) -> float | None:
    if not isinstance(exc, openai.APIStatusError):
        return None
    try:
        return float(exc.response.headers.get("retry-after", ""))
    except ValueError:
        return None


def _clip(text: str, limit: int = _MAX_CAUSE_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
