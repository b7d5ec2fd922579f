"""`LLMClient` through the real `openai` client against the scripted HTTP server."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator

import pytest
from pydantic import BaseModel

from tempr.errors import NotConfigured, UpstreamLLMError
from tempr.inference.llm import LLMClient, RetryPolicy
from tempr.settings import Settings
from tests.llm_server import (
    ScriptedLLMServer,
    delay,
    reject_json_schema,
    reply_json,
    reply_text,
    status,
)

MODEL = "test-model"
CITY = {"city": "Lyon", "population": 522_000}


class City(BaseModel):
    city: str
    population: int


@pytest.fixture(scope="module")
def running_server() -> Iterator[ScriptedLLMServer]:
    with ScriptedLLMServer() as srv:
        yield srv


@pytest.fixture
def server(running_server: ScriptedLLMServer) -> ScriptedLLMServer:
    running_server.reset()
    return running_server


def make_client(
    base_url: str, *, timeout_s: float = 5.0, max_retries: int = 2, base_delay_s: float = 0.01
) -> LLMClient:
    settings = Settings(
        llm_base_url=base_url, llm_model=MODEL, llm_timeout_s=timeout_s, llm_max_retries=max_retries
    )
    policy = RetryPolicy(max_retries=max_retries, base_delay_s=base_delay_s, max_delay_s=0.2, jitter=0.0)
    return LLMClient(settings, retry=policy)


async def ask_city(client: LLMClient) -> City:
    return await client.complete_structured(
        system="You answer questions about cities.",
        user="Which city? Answer in JSON.",
        response_model=City,
        schema_name="city",
    )


async def test_valid_structured_output_and_request_shape(server: ScriptedLLMServer) -> None:
    server.script(reply_json(CITY))
    async with make_client(server.base_url) as client:
        assert await ask_city(client) == City(**CITY)
        assert client.last_usage is not None and client.last_usage.total_tokens > 0

    body = server.last_request
    assert body["model"] == MODEL
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "city", "schema": City.model_json_schema(), "strict": False},
    }
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert body["messages"][0]["content"] == "You answer questions about cities."


async def test_invalid_json_is_retried_with_feedback(server: ScriptedLLMServer) -> None:
    server.script(reply_text('{"city": "Lyon", '), reply_json(CITY))
    async with make_client(server.base_url) as client:
        assert await ask_city(client) == City(**CITY)
    assert len(server.requests) == 2
    assert "bad JSON" in server.requests[1]["messages"][1]["content"]


async def test_code_fenced_json_is_accepted(server: ScriptedLLMServer) -> None:
    server.script(reply_text(f"```json\n{json.dumps(CITY)}\n```"))
    async with make_client(server.base_url) as client:
        assert await ask_city(client) == City(**CITY)


async def test_always_invalid_output_raises_with_validation_cause(
    server: ScriptedLLMServer,
) -> None:
    server.default = lambda _: {"city": "Lyon", "population": "many"}
    async with make_client(server.base_url, max_retries=2) as client:
        with pytest.raises(UpstreamLLMError, match="validation error") as info:
            await ask_city(client)
    assert "population" in str(info.value)
    assert "3 attempt" in str(info.value)
    assert len(server.requests) == 3


@pytest.mark.parametrize("code", [429, 500, 503])
async def test_transient_status_is_retried_after_backoff(server: ScriptedLLMServer, code: int) -> None:
    server.script(status(code), reply_json(CITY))
    async with make_client(server.base_url, base_delay_s=0.1) as client:
        started = time.monotonic()
        assert await ask_city(client) == City(**CITY)
        assert time.monotonic() - started >= 0.1
    assert len(server.requests) == 2


async def test_backoff_grows_exponentially(server: ScriptedLLMServer) -> None:
    server.script(status(500), status(500), reply_json(CITY))
    async with make_client(server.base_url, base_delay_s=0.05) as client:
        started = time.monotonic()
        await ask_city(client)
        assert time.monotonic() - started >= 0.05 + 0.1


async def test_persistent_rate_limit_raises_with_last_status(server: ScriptedLLMServer) -> None:
    server.default = lambda _: status(429, "slow down")
    async with make_client(server.base_url, max_retries=1) as client:
        with pytest.raises(UpstreamLLMError, match="HTTP 429: slow down"):
            await ask_city(client)
    assert len(server.requests) == 2


async def test_timeouts_are_retried_then_raise(server: ScriptedLLMServer) -> None:
    server.default = lambda _: delay(5, reply_json(CITY))
    async with make_client(server.base_url, timeout_s=0.3, max_retries=1) as client:
        started = time.monotonic()
        with pytest.raises(UpstreamLLMError, match=r"timeout after 0\.3s"):
            await ask_city(client)
        assert time.monotonic() - started < 3
    assert len(server.requests) == 2


async def test_timeout_then_success(server: ScriptedLLMServer) -> None:
    server.script(delay(5), reply_json(CITY))
    async with make_client(server.base_url, timeout_s=0.3) as client:
        assert await ask_city(client) == City(**CITY)
    assert len(server.requests) == 2


async def test_rejected_json_schema_falls_back_and_remembers(server: ScriptedLLMServer) -> None:
    server.script(reject_json_schema(), reply_json(CITY), reply_json(CITY))
    async with make_client(server.base_url, max_retries=0) as client:
        assert await ask_city(client) == City(**CITY)
        assert client.json_schema_supported is False
        assert await ask_city(client) == City(**CITY)

    formats = [body["response_format"] for body in server.requests]
    assert formats[0]["type"] == "json_schema"
    assert formats[1:] == [{"type": "json_object"}, {"type": "json_object"}]
    system = server.requests[1]["messages"][0]["content"]
    assert system.startswith("You answer questions about cities.")
    assert json.dumps(City.model_json_schema(), separators=(",", ":")) in system


async def test_server_without_json_schema_support(server: ScriptedLLMServer) -> None:
    server.supports_json_schema = False
    server.default = lambda _: reply_json(CITY)
    async with make_client(server.base_url) as client:
        assert await ask_city(client) == City(**CITY)
    assert len(server.requests) == 2


async def test_422_counts_as_json_schema_rejection(server: ScriptedLLMServer) -> None:
    server.script(status(422, "unknown field"), reply_json(CITY))
    async with make_client(server.base_url, max_retries=0) as client:
        assert await ask_city(client) == City(**CITY)
    assert server.requests[1]["response_format"] == {"type": "json_object"}


async def test_other_client_errors_are_not_retried(server: ScriptedLLMServer) -> None:
    server.script(status(401, "bad key"), reply_json(CITY))
    async with make_client(server.base_url) as client:
        with pytest.raises(UpstreamLLMError, match="HTTP 401: bad key"):
            await ask_city(client)
    assert len(server.requests) == 1


async def test_complete_text(server: ScriptedLLMServer) -> None:
    server.script(status(500), reply_text("Paris is the capital of France."))
    async with make_client(server.base_url) as client:
        text = await client.complete_text(system="Be brief.", user="Capital of France?")
    assert text == "Paris is the capital of France."
    assert "response_format" not in server.last_request


async def test_connection_refused_raises_after_retries() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    async with make_client(f"http://127.0.0.1:{port}/v1", max_retries=1) as client:
        with pytest.raises(UpstreamLLMError, match="connection error"):
            await ask_city(client)


def test_unconfigured_llm_is_unavailable() -> None:
    with pytest.raises(NotConfigured):
        LLMClient(Settings(llm_base_url=None, llm_model=None))


def test_retry_policy_is_capped_and_jittered() -> None:
    policy = RetryPolicy(max_retries=10, base_delay_s=0.5, max_delay_s=4.0, jitter=0.5)
    assert all(0.25 <= policy.delay(1) <= 0.5 for _ in range(50))
    assert all(2.0 <= policy.delay(8) <= 4.0 for _ in range(50))
    assert policy.delay(1, retry_after=3.0) == 3.0
