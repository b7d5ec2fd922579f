"""The MCP server with the official `mcp` client: at the API's `/mcp` (streamable HTTP) and as
`tempr mcp` over stdio, both against the live stack."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult, TextContent

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
TOOLS = {
    "retain",
    "recall",
    "reflect",
    "list_banks",
    "create_bank",
    "get_bank",
    "bank_stats",
    "list_entities",
    "delete_document",
    "forget",
    "correct",
}


def _url(api: httpx.Client) -> str:
    return str(api.base_url).rstrip("/")


def _text(result: CallToolResult) -> str:
    return " ".join(block.text for block in result.content if isinstance(block, TextContent))


def _ok(result: CallToolResult) -> dict:
    assert not result.is_error, _text(result)
    assert isinstance(result.structured_content, dict)
    return result.structured_content


@asynccontextmanager
async def http_session(api: httpx.Client) -> AsyncIterator[ClientSession]:
    async with (
        streamable_http_client(f"{_url(api)}/mcp") as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


@asynccontextmanager
async def stdio_session(*args: str) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(command=sys.executable, args=["-m", "tempr.cli", "mcp", *args], cwd=ROOT)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


async def test_http_tools_retain_then_recall_their_own_write(api: httpx.Client, bank: str) -> None:
    async with http_session(api) as mcp:
        tools = {tool.name: tool for tool in (await mcp.list_tools()).tools}
        assert set(tools) == TOOLS
        assert "before answering" in (tools["recall"].description or "")
        assert tools["recall"].input_schema["required"] == ["bank", "query"]

        retained = _ok(
            await mcp.call_tool(
                "retain",
                {
                    "bank": bank,
                    "content": "I moved to Lisbon in May 2024.",
                    "speaker": "Noor",
                    "message_id": "n1",
                },
            )
        )
        assert retained["accepted"] == 1
        found = _ok(
            await mcp.call_tool(
                "recall",
                {"bank": bank, "query": "Where did Noor move?", "after": retained["consistency_token"]},
            )
        )
        assert "Lisbon" in found["facts"][0]["text"]
        assert found["facts"][0]["source_message_ids"] == ["n1"]
        assert "Lisbon" in _text(await mcp.call_tool("recall", {"bank": bank, "query": "Lisbon"}))

        stats = _ok(await mcp.call_tool("bank_stats", {"bank": bank}))
        assert stats["facts"] >= 1 and stats["pending_events"] == 0
        entities = _ok(await mcp.call_tool("list_entities", {"bank": bank}))
        assert any(e["canonical_name"] == "Noor" for e in entities["items"])


async def test_http_document_can_be_forgotten(api: httpx.Client, bank: str) -> None:
    async with http_session(api) as mcp:
        retained = _ok(
            await mcp.call_tool(
                "retain", {"bank": bank, "content": "Ines keeps bees on her roof.", "document_id": "bees"}
            )
        )
        _ok(
            await mcp.call_tool(
                "recall", {"bank": bank, "query": "bees", "after": retained["consistency_token"]}
            )
        )
        deleted = _ok(await mcp.call_tool("delete_document", {"bank": bank, "document_id": "bees"}))
        assert deleted["document_id"] == "bees" and deleted["facts_removed"] >= 1
        assert _ok(await mcp.call_tool("bank_stats", {"bank": bank}))["facts"] == 0
        missing = await mcp.call_tool("delete_document", {"bank": bank, "document_id": "bees"})
        assert missing.is_error and "404" in _text(missing)


async def test_http_a_fact_can_be_corrected_then_forgotten(api: httpx.Client, bank: str) -> None:
    async with http_session(api) as mcp:
        tools = {tool.name: tool for tool in (await mcp.list_tools()).tools}
        assert "forget what I told you" in (tools["forget"].description or "")
        assert "wrong or out of date" in (tools["correct"].description or "")
        retained = _ok(
            await mcp.call_tool(
                "retain",
                {
                    "bank": bank,
                    "content": "I moved to Lisbon in May 2024.",
                    "speaker": "Noor",
                    "message_id": "n1",
                },
            )
        )
        query = {"bank": bank, "query": "Where did Noor move?", "after": retained["consistency_token"]}
        fact = _ok(await mcp.call_tool("recall", query))["facts"][0]
        fixed = _ok(
            await mcp.call_tool(
                "correct", {"bank": bank, "memory_id": fact["id"], "text": "Noor moved to Porto in May 2024."}
            )
        )
        found = _ok(await mcp.call_tool("recall", {**query, "after": fixed["consistency"]["token"]}))
        assert found["facts"][0]["text"] == "Noor moved to Porto in May 2024."
        gone = _ok(await mcp.call_tool("forget", {"bank": bank, "message_id": "n1"}))
        assert gone["facts_removed"] >= 1
        assert _ok(await mcp.call_tool("bank_stats", {"bank": bank}))["facts"] == 0
        both = await mcp.call_tool("forget", {"bank": bank, "memory_id": fact["id"], "message_id": "n1"})
        assert both.is_error and "exactly one" in _text(both)


async def test_http_api_errors_become_tool_errors_with_the_servers_message(
    api: httpx.Client, bank: str
) -> None:
    async with http_session(api) as mcp:
        invalid = await mcp.call_tool("recall", {"bank": bank, "query": "x", "budget": "huge"})
        assert invalid.is_error and "budget" in _text(invalid)
        refused = await mcp.call_tool("bank_stats", {"bank": "not a bank id"})
        assert refused.is_error and "tempr refused (422)" in _text(refused) and "bank_id" in _text(refused)
        unknown = await mcp.call_tool("get_bank", {"bank": bank})
        assert unknown.is_error and "tempr refused (404)" in _text(unknown)
        no_llm = await mcp.call_tool("reflect", {"bank": bank, "query": "What do I think of Lisbon?"})
        assert no_llm.is_error and "tempr refused (501)" in _text(no_llm) and "LLM" in _text(no_llm)


async def test_http_banks_are_created_read_and_listed(api: httpx.Client, bank: str) -> None:
    async with http_session(api) as mcp:
        created = _ok(
            await mcp.call_tool(
                "create_bank",
                {
                    "bank": bank,
                    "name": "Ada",
                    "background": "I am a ship's navigator.",
                    "disposition": {"skepticism": 5, "literalism": 2, "empathy": 4, "bias_strength": 0.7},
                },
            )
        )
        assert created["name"] == "Ada" and created["disposition"]["skepticism"] == 5
        read = _ok(await mcp.call_tool("get_bank", {"bank": bank}))
        assert read["background"] == "I am a ship's navigator."
        listed = _ok(await mcp.call_tool("list_banks", {"limit": 1000}))
        assert bank in [b["bank_id"] for b in listed["items"]]


async def test_stdio_server_with_a_fixed_bank(api: httpx.Client, bank: str) -> None:
    async with stdio_session("--bank", bank, "--url", _url(api)) as mcp:
        tools = {tool.name: tool for tool in (await mcp.list_tools()).tools}
        assert set(tools) == TOOLS
        assert all("bank" not in tool.input_schema.get("properties", {}) for tool in tools.values())
        retained = _ok(await mcp.call_tool("retain", {"content": "Omar plays the oud.", "speaker": "Omar"}))
        assert retained["bank_id"] == bank
        found = _ok(
            await mcp.call_tool(
                "recall", {"query": "What instrument does Omar play?", "after": retained["consistency_token"]}
            )
        )
        assert "oud" in found["facts"][0]["text"]
        assert _ok(await mcp.call_tool("bank_stats", {}))["bank_id"] == bank
        _ok(await mcp.call_tool("create_bank", {"name": "Omar's memory"}))
        listed = _ok(await mcp.call_tool("list_banks", {"limit": 1000}))
        assert bank in [b["bank_id"] for b in listed["items"]]


async def test_stdio_server_reports_an_unreachable_api() -> None:
    async with stdio_session("--url", "http://127.0.0.1:9") as mcp:
        tools = {tool.name: tool for tool in (await mcp.list_tools()).tools}
        assert "bank" in tools["recall"].input_schema["required"]
        down = await mcp.call_tool("bank_stats", {"bank": "anyone"})
        assert down.is_error and "cannot reach tempr at http://127.0.0.1:9" in _text(down)
