"""Nothing of one tenant's banks reaches another tenant's key: recall, reflect, entities,
documents, dead letters, the consistency wait, MCP tools; and the keys' own lifecycle:
bootstrap, CLI, expiry, revocation, audit, rate limits, TEMPR_API_KEY."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.types import CallToolResult, TextContent

from tempr.client import TemprAPIError, TemprClient
from tempr.streams.publisher import create_producer
from tempr.streams.topics import MESSAGES
from tests.conftest import wait_until
from tests.security.conftest import SECRET_A, A, AuthStack, B, World, wait_materialized

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
KEY_RE = re.compile(r"^tmpr_[0-9a-f]{16}_[A-Za-z0-9_-]{43}$")


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (k, *_strings(v))]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def texts(response: httpx.Response) -> str:
    """Every string a recall's results carry (its answer also echoes the query). Numbers
    are left out: a score's digits once held "7731" by chance and failed CI."""
    assert response.status_code == 200, response.text
    return "\n".join(_strings(response.json()["results"]))


def test_listing_banks_shows_only_the_keys_banks(auth_stack: AuthStack, world: World) -> None:
    with auth_stack.client(world.keys["rw-a"]) as a, auth_stack.client(world.keys["admin"]) as admin:
        page = a.get("/v1/banks", params={"limit": 1000}).json()
        ids = [b["bank_id"] for b in page["items"]]
        assert A in ids and all(i.startswith("tenant-a-") for i in ids)
        assert page["total"] == len(ids)
        everything = admin.get("/v1/banks", params={"limit": 1000}).json()
        assert B in [b["bank_id"] for b in everything["items"]] and everything["total"] > page["total"]
    with auth_stack.client(world.keys["rw-b1"]) as b:
        assert [x["bank_id"] for x in b.get("/v1/banks").json()["items"]] == [B]


def test_recall_entities_documents_stay_in_their_tenant(auth_stack: AuthStack, world: World) -> None:
    with auth_stack.client(world.keys["admin"]) as admin:
        for bank in (A, B):
            wait_materialized(admin, bank)
        # B's secret is there to be found, so its absence below means something.
        found_b = texts(admin.post(f"/v1/banks/{B}/recall", json={"query": "launch code blue vase"}))
        assert "7731" in found_b
        b_entities = admin.get(f"/v1/banks/{B}/entities").json()["items"]
        bruno = next(e for e in b_entities if "Bruno" in e["canonical_name"])
    with auth_stack.client(world.keys["rw-a"]) as a:
        recalled = texts(a.post(f"/v1/banks/{A}/recall", json={"query": "launch code blue vase Bruno 7731"}))
        assert "7731" not in recalled and "Bruno" not in recalled
        assert "Rosinante" in texts(a.post(f"/v1/banks/{A}/recall", json={"query": "red bicycle"}))
        assert a.post(f"/v1/banks/{B}/recall", json={"query": "launch code"}).status_code == 403

        names = [e["canonical_name"] for e in a.get(f"/v1/banks/{A}/entities").json()["items"]]
        assert names and not any("Bruno" in n for n in names)
        assert a.get(f"/v1/banks/{A}/entities/{bruno['id']}").status_code == 404
        assert a.get(f"/v1/banks/{B}/entities/{bruno['id']}").status_code == 403

        docs = [d["id"] for d in a.get(f"/v1/banks/{A}/documents").json()["items"]]
        assert docs == ["doc-a"]
        assert a.delete(f"/v1/banks/{A}/documents/doc-b").status_code == 404
        assert a.delete(f"/v1/banks/{B}/documents/doc-b").status_code == 403
        assert a.get(f"/v1/banks/{B}/opinions").status_code == 403
        # Reflect (no LLM here: 501 where the key may, 403 where it may not).
        assert a.post(f"/v1/banks/{A}/reflect", json={"query": "Where is the code?"}).status_code == 501
        assert a.post(f"/v1/banks/{B}/reflect", json={"query": "Where is the code?"}).status_code == 403
    with auth_stack.client(world.keys["admin"]) as admin:
        assert [d["id"] for d in admin.get(f"/v1/banks/{B}/documents").json()["items"]] == ["doc-b"]


def test_the_consistency_wait_knows_nothing_of_other_banks(auth_stack: AuthStack, world: World) -> None:
    with auth_stack.client(world.keys["admin"]) as admin:
        wait_materialized(admin, A)
        # A token of B newer than anything in A, and materialized.
        retained = admin.post(
            f"/v1/banks/{B}/memories", json={"items": [{"content": "Bruno moved the vase."}]}
        )
        token_b = retained.json()["consistency"]["token"]
        wait_materialized(admin, B)
    with auth_stack.client(world.keys["rw-a"]) as a:
        # On A it must not be "done" (neither the journal's global head nor B's progress shows
        # through): the recall waits until it runs into the server's time limit.
        started = time.monotonic()
        r = a.post(f"/v1/banks/{A}/recall", json={"query": "bicycle", "after": token_b})
        assert r.status_code == 504, r.text
        assert "TEMPR_RECALL_TIMEOUT_S" in r.json()["detail"] and time.monotonic() - started >= 5
        token = a.post(f"/v1/banks/{A}/memories", json={"items": [{"content": "Alice bought a bell."}]})
        assert token.status_code == 202
        wait_materialized(a, A)
        own = a.post(
            f"/v1/banks/{A}/recall",
            json={"query": "bell", "after": token.json()["consistency"]["token"]},
        )
        assert own.status_code == 200, own.text


def _produce_bad(bootstrap: str, key: str, marker: str) -> None:
    async def send() -> None:
        producer = create_producer(bootstrap)
        await producer.start()
        try:
            value = json.dumps({"event_type": "message", "schema_version": 1, "marker": marker}).encode()
            await producer.send_and_wait(MESSAGES.name, value=value, key=key.encode())
        finally:
            await producer.stop()

    asyncio.run(send())


def test_dead_letters_show_only_the_keys_banks(auth_stack: AuthStack, world: World) -> None:
    marker = uuid.uuid4().hex
    bootstrap = auth_stack.supervisor.settings.bootstrap
    _produce_bad(bootstrap, f"{A}/c-{marker}", f"a-{marker}")
    _produce_bad(bootstrap, f"{B}/c-{marker}", f"b-{marker}")

    def mine(client: httpx.Client) -> list[dict]:
        letters = client.get("/v1/dead-letters", params={"limit": 1000}).json()
        return [d for d in letters if marker in d["payload"]]

    with auth_stack.client(world.keys["admin"]) as admin, auth_stack.client(world.keys["admin-a"]) as admin_a:
        wait_until(lambda: len(mine(admin)) == 2, timeout=60)
        letter_b = next(d for d in mine(admin) if d["key"].startswith(B))
        seen = mine(admin_a)
        assert [d["key"] for d in seen] == [f"{A}/c-{marker}"]
        assert all(d["key"].startswith("tenant-a-") for d in admin_a.get("/v1/dead-letters").json())
        assert admin_a.post(f"/v1/dead-letters/{letter_b['id']}/replay").status_code == 404
        assert admin_a.post(f"/v1/dead-letters/{seen[0]['id']}/replay").status_code == 200
        audit = admin_a.get("/v1/audit", params={"bank_id": A}).json()["items"]
        assert any(
            r["action"] == "POST /v1/dead-letters/{letter_id}/replay" and r["status"] == 200 for r in audit
        )
    with auth_stack.client(world.keys["rw-a"]) as a:
        assert a.get("/v1/dead-letters").status_code == 403


@asynccontextmanager
async def mcp_session(url: str, key: str | None) -> AsyncIterator[ClientSession]:
    headers = {"Authorization": f"Bearer {key}"} if key else None
    async with (
        create_mcp_http_client(headers=headers) as http,
        streamable_http_client(f"{url}/mcp", http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def _text(result: CallToolResult) -> str:
    return " ".join(block.text for block in result.content if isinstance(block, TextContent))


async def test_mcp_tools_check_the_callers_key(auth_stack: AuthStack, world: World) -> None:
    async with mcp_session(auth_stack.url, world.keys["rw-a"]) as session:
        banks = await session.call_tool("list_banks", {"limit": 1000})
        ids = [b["bank_id"] for b in banks.structured_content["items"]]
        assert A in ids and all(i.startswith("tenant-a-") for i in ids)
        refused = await session.call_tool("recall", {"bank": B, "query": "launch code"})
        assert refused.is_error and "403" in _text(refused) and "7731" not in _text(refused)
        recalled = await session.call_tool("recall", {"bank": A, "query": "red bicycle"})
        assert not recalled.is_error and "Rosinante" in json.dumps(recalled.structured_content)
        entities = await session.call_tool("list_entities", {"bank": B})
        assert entities.is_error and "403" in _text(entities)
    async with mcp_session(auth_stack.url, world.keys["r-a"]) as session:
        retained = await session.call_tool("retain", {"bank": A, "content": "Read keys cannot write."})
        assert retained.is_error and "403" in _text(retained) and "write" in _text(retained)
    for key in (None, "tmpr_0123456789abcdef_" + "A" * 43):
        async with httpx.AsyncClient() as http:
            headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
            if key:
                headers["Authorization"] = f"Bearer {key}"
            body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
            r = await http.post(f"{auth_stack.url}/mcp", json=body, headers=headers)
        assert r.status_code == 401, r.text


async def test_mcp_stdio_takes_the_key_from_the_environment(auth_stack: AuthStack, world: World) -> None:
    env = {**os.environ, "TEMPR_API_KEY": world.keys["rw-b1"], "TEMPR_URL": auth_stack.url}
    params = StdioServerParameters(command=sys.executable, args=["-m", "tempr.cli", "mcp"], cwd=ROOT, env=env)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        banks = await session.call_tool("list_banks", {})
        assert [b["bank_id"] for b in banks.structured_content["items"]] == [B]


def test_client_takes_tempr_api_key(
    auth_stack: AuthStack, world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TEMPR_API_KEY", world.keys["r-a"])
    with TemprClient(auth_stack.url, max_retries=0) as tempr:
        assert tempr.bank(A).bank_id == A
        with pytest.raises(TemprAPIError) as refused:
            tempr.bank(B)
        assert refused.value.status_code == 403
    monkeypatch.delenv("TEMPR_API_KEY")
    with TemprClient(auth_stack.url, max_retries=0) as tempr, pytest.raises(TemprAPIError) as missing:
        tempr.bank(A)
    assert missing.value.status_code == 401


def test_keys_api_lifecycle_expiry_and_no_escalation(auth_stack: AuthStack, world: World) -> None:
    with auth_stack.client(world.keys["admin"]) as admin:
        made = admin.post("/v1/keys", json={"name": "svc-temp", "scopes": ["read"], "banks": [A]})
        assert made.status_code == 201 and KEY_RE.match(made.json()["key"])
        listed = admin.get("/v1/keys").json()
        assert "svc-temp" in [k["name"] for k in listed] and all("key" not in k for k in listed)
        assert "secret_hash" not in json.dumps(listed)
        dup = admin.post("/v1/keys", json={"name": "svc-temp", "scopes": ["read"], "banks": [A]})
        assert dup.status_code == 409
        with auth_stack.client(made.json()["key"]) as temp:
            assert temp.get(f"/v1/banks/{A}").status_code == 200
            assert admin.delete("/v1/keys/svc-temp").status_code == 200
            assert temp.get(f"/v1/banks/{A}").status_code == 401
        soon = (datetime.now(UTC) + timedelta(seconds=2)).isoformat()
        short = admin.post(
            "/v1/keys", json={"name": "short", "scopes": ["read"], "banks": [A], "expires_at": soon}
        )
        assert short.status_code == 201
        with auth_stack.client(short.json()["key"]) as temp:
            assert temp.get(f"/v1/banks/{A}").status_code == 200
            time.sleep(2.5)
            assert temp.get(f"/v1/banks/{A}").status_code == 401
    with auth_stack.client(world.keys["admin-a"]) as admin_a:
        # An admin of some banks cannot mint keys (for any bank, its own included).
        r = admin_a.post("/v1/keys", json={"name": "escalate", "scopes": ["admin"], "banks": ["*"]})
        assert r.status_code == 403


def test_admin_actions_are_audited_per_bank(auth_stack: AuthStack, world: World) -> None:
    with auth_stack.client(world.keys["admin-a"]) as admin_a:
        assert admin_a.patch(f"/v1/banks/{A}", json={"name": "Tenant A"}).status_code == 200
        rows = admin_a.get("/v1/audit", params={"limit": 1000}).json()["items"]
        mine = [r for r in rows if r["actor"] == "admin-a" and r["action"] == "PATCH /v1/banks/{bank_id}"]
        assert mine and mine[0]["bank_id"] == A and mine[0]["status"] == 200
        assert all(r["bank_id"] and r["bank_id"].startswith("tenant-a-") for r in rows)
    with auth_stack.client(world.keys["admin"]) as admin:
        rows = admin.get("/v1/audit", params={"limit": 1000}).json()["items"]
        created = [r for r in rows if r["action"] == "POST /v1/keys" and r["status"] == 201]
        assert {"rw-a", "admin-a"} <= {r["detail"].get("name") for r in created}
        assert any(r["actor"] == "bootstrap" and r["action"] == "keys.create" for r in rows)


def test_rate_limit_answers_429_with_retry_after(auth_stack: AuthStack, world: World) -> None:
    with auth_stack.client(world.keys["admin"]) as admin:
        made = admin.post(
            "/v1/keys",
            json={"name": "slow", "scopes": ["read", "write"], "banks": [A], "rate_limit_per_min": 2},
        )
        assert made.status_code == 201
    with auth_stack.client(made.json()["key"]) as slow:
        answers = [slow.post(f"/v1/banks/{A}/recall", json={"query": "bell"}) for _ in range(3)]
        assert [r.status_code for r in answers] == [200, 200, 429]
        assert 1 <= int(answers[2].headers["retry-after"]) <= 31
        # Retain has its own bucket; reads that are not recall are not limited.
        assert (
            slow.post(f"/v1/banks/{A}/memories", json={"items": [{"content": "Slow note."}]}).status_code
            == 202
        )
        assert slow.get(f"/v1/banks/{A}/stats").status_code == 200


def test_health_is_open_and_metrics_need_an_admin_of_every_bank(auth_stack: AuthStack, world: World) -> None:
    with httpx.Client(base_url=auth_stack.url) as anonymous:
        health = anonymous.get("/health")
        assert health.status_code == 200 and "tenant-" not in health.text
        assert anonymous.get("/metrics").status_code == 401
    with auth_stack.client(world.keys["admin-a"]) as admin_a:
        assert admin_a.get("/metrics").status_code == 403
    with auth_stack.client(world.keys["admin"]) as admin:
        assert "tempr_http_requests" in admin.get("/metrics").text


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tempr.cli", *args],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=ROOT,
        env=env or dict(os.environ),
    )


def test_cli_keys_on_the_database(auth_stack: AuthStack, world: World) -> None:
    data_dir = str(auth_stack.supervisor.settings.data_dir)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TEMPR_")}
    made = _cli(
        "keys",
        "create",
        "--name",
        "cli-svc",
        "--scopes",
        "read",
        "--banks",
        "tenant-a-*",
        "--data-dir",
        data_dir,
        env=env,
    )
    assert made.returncode == 0, made.stderr
    key = made.stdout.strip()
    assert made.stdout.count("\n") == 1 and KEY_RE.match(key), made.stdout  # the key alone
    with auth_stack.client(key) as client:
        assert client.get(f"/v1/banks/{A}").status_code == 200
        assert client.get(f"/v1/banks/{B}").status_code == 403
        listed = _cli("keys", "list", "--data-dir", data_dir, env=env)
        assert listed.returncode == 0 and "cli-svc" in listed.stdout and key not in listed.stdout
        # Through TEMPR_DATABASE_URL as well; the pepper comes from the data directory.
        dsn_env = {
            **env,
            "TEMPR_DATABASE_URL": auth_stack.supervisor.settings.database_url or "",
            "TEMPR_DATA_DIR": data_dir,
        }
        revoked = _cli("keys", "revoke", "cli-svc", env=dsn_env)
        assert revoked.returncode == 0, revoked.stderr
        assert client.get(f"/v1/banks/{A}").status_code == 401
    bad = _cli(
        "keys", "create", "--name", "x", "--scopes", "root", "--banks", "*", "--data-dir", data_dir, env=env
    )
    assert bad.returncode == 2 and "scopes" in bad.stderr and bad.stdout == ""
    assert SECRET_A  # the tenants' data is untouched by the CLI
