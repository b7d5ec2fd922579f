"""Keys × routes × banks: every route answers 401, 403 or its own answer as the scopes say.

The expectation is written here from the issue's table, independently of the server's
policy (bank patterns are checked with `fnmatch`), and a refusal for a bank that exists
reads exactly like the refusal for one that does not.
"""

from __future__ import annotations

import fnmatch
import uuid
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from tests.security.conftest import KEYS, AuthStack, World

pytestmark = pytest.mark.integration

ALL = ["read", "write", "admin"]


@dataclass(frozen=True)
class Route:
    method: str
    path: str  # {b} is the bank
    scope: str | None  # None: open
    ok: frozenset[int]  # answers that mean "let through" on an existing bank
    body: Any = None
    every_bank: bool = False  # needs a key for '*'
    scratch: bool = False  # destroys its bank: run on a fresh one

    @property
    def banked(self) -> bool:
        return "{b}" in self.path


def _ok(*codes: int) -> frozenset[int]:
    return frozenset(codes)


NIL = "00000000-0000-0000-0000-000000000000"
ROUTES = [
    Route("GET", "/health", None, _ok(200)),
    Route("GET", "/metrics", "admin", _ok(200), every_bank=True),
    Route("GET", "/v1/banks", "read", _ok(200)),
    Route("GET", "/v1/banks/{b}", "read", _ok(200)),
    Route("PUT", "/v1/banks/{b}", "admin", _ok(200, 201), body={"name": "Matrix"}),
    Route("PATCH", "/v1/banks/{b}", "admin", _ok(200), body={"disposition": {"empathy": 4}}),
    Route("DELETE", "/v1/banks/{b}", "admin", _ok(200), scratch=True),
    Route("GET", "/v1/banks/{b}/stats", "read", _ok(200)),
    Route(
        "POST", "/v1/banks/{b}/memories", "write", _ok(202), body={"items": [{"content": "A matrix note."}]}
    ),
    Route("GET", "/v1/banks/{b}/memories", "read", _ok(200)),
    Route("GET", f"/v1/banks/{{b}}/memories/{NIL}", "read", _ok(404)),
    Route("PATCH", f"/v1/banks/{{b}}/memories/{NIL}", "write", _ok(404), body={"text": "Corrected."}),
    Route("DELETE", f"/v1/banks/{{b}}/memories/{NIL}", "write", _ok(404)),
    Route("DELETE", "/v1/banks/{b}/messages/no-such-message", "write", _ok(404)),
    Route("DELETE", "/v1/banks/{b}/conversations/no-such-conversation", "write", _ok(404)),
    Route("POST", "/v1/banks/{b}/recall", "read", _ok(200), body={"query": "bicycle", "budget": "low"}),
    Route("POST", "/v1/banks/{b}/reflect", "write", _ok(501), body={"query": "What do you think?"}),  # no LLM
    Route("GET", "/v1/banks/{b}/entities", "read", _ok(200)),
    Route("GET", f"/v1/banks/{{b}}/entities/{NIL}", "read", _ok(404)),
    Route("GET", "/v1/banks/{b}/documents", "read", _ok(200)),
    Route("DELETE", "/v1/banks/{b}/documents/no-such-doc", "write", _ok(404)),
    Route("GET", "/v1/banks/{b}/opinions", "read", _ok(200)),
    Route("GET", f"/v1/banks/{{b}}/opinions/{NIL}", "read", _ok(404)),
    Route("POST", "/v1/banks/{b}/replay", "admin", _ok(202)),
    Route("GET", "/v1/banks/{b}/export", "admin", _ok(200)),
    Route("POST", "/v1/banks/{b}/import", "admin", _ok(400)),  # an empty body is no export
    Route("GET", "/v1/dead-letters", "admin", _ok(200)),
    Route("POST", f"/v1/dead-letters/{NIL}/replay", "admin", _ok(404)),
    Route("GET", "/v1/keys", "admin", _ok(200), every_bank=True),
    Route(
        "POST",
        "/v1/keys",
        "admin",
        _ok(400),
        body={"name": "x", "scopes": ["nope"], "banks": ["*"]},
        every_bank=True,
    ),
    Route("DELETE", "/v1/keys/no-such-key", "admin", _ok(404), every_bank=True),
    Route("GET", "/v1/audit", "admin", _ok(200)),
]


def _grants(key: str, route: Route, bank: str | None) -> bool:
    if route.scope is None:
        return True
    scopes, patterns = KEYS.get(key, (ALL, ["*"]))
    if route.scope not in scopes:
        return False
    if route.every_bank and "*" not in patterns:
        return False
    return bank is None or any(fnmatch.fnmatchcase(bank, p) for p in patterns)


def _send(client: httpx.Client, route: Route, bank: str | None) -> httpx.Response:
    path = route.path.replace("{b}", bank or "")
    return client.request(route.method, path, json=route.body, timeout=60)


def _bad_keys(world: World) -> dict[str, str | None]:
    real = world.keys["rw-a"]
    wrong_secret = real[:-4] + ("AAAA" if not real.endswith("AAAA") else "BBBB")
    return {"none": None, "garbage": "not-a-key", "wrong-secret": wrong_secret, "basic": "Basic abc"}


def test_no_or_bad_key_gets_401_everywhere_but_health(auth_stack: AuthStack, world: World) -> None:
    for label, key in _bad_keys(world).items():
        with httpx.Client(base_url=auth_stack.url, timeout=60) as client:
            if key is not None:
                client.headers["Authorization"] = key if key.startswith("Basic") else f"Bearer {key}"
            for route in ROUTES:
                r = _send(client, route, "tenant-a-1" if route.banked else None)
                if route.scope is None:
                    assert r.status_code == 200, (label, route)
                else:
                    assert r.status_code == 401, (label, route.method, route.path, r.status_code, r.text)
                    assert r.headers.get("www-authenticate") == "Bearer"
                    assert "tenant-a-1" not in r.text


def _scratch(admin: httpx.Client, prefix: str) -> str:
    bank = f"{prefix}{uuid.uuid4().hex[:8]}"
    assert admin.put(f"/v1/banks/{bank}", json={"name": bank}).status_code == 201
    return bank


def test_every_key_on_every_route_and_bank(auth_stack: AuthStack, world: World, admin: httpx.Client) -> None:
    checked = 0
    for key_name, key in world.keys.items():
        with auth_stack.client(key) as client:
            for route in ROUTES:
                if not route.banked:
                    r = _send(client, route, None)
                    allowed = _grants(key_name, route, None)
                    expect = route.ok if allowed else {403}
                    assert r.status_code in expect, (
                        key_name,
                        route.method,
                        route.path,
                        r.status_code,
                        r.text,
                    )
                    checked += 1
                    continue
                # Tenant A's bank, tenant B's bank, and a bank that does not exist (in B's range).
                own = _scratch(admin, "tenant-a-del-") if route.scratch else "tenant-a-1"
                other = _scratch(admin, "tenant-b-del-") if route.scratch else "tenant-b-1"
                missing = f"tenant-b-none-{uuid.uuid4().hex[:8]}"
                answers = {}
                for bank in (own, other, missing):
                    r = _send(client, route, bank)
                    answers[bank] = r
                    checked += 1
                    where = (key_name, route.method, route.path, bank, r.status_code, r.text[:300])
                    if not _grants(key_name, route, bank):
                        assert r.status_code == 403, where
                    elif bank == missing:
                        assert (
                            r.status_code not in (401, 403, 429) and r.status_code < 500
                        ) or r.status_code == 501, where
                    else:
                        assert r.status_code in route.ok, where
                # A refusal never tells whether the bank exists.
                if not _grants(key_name, route, other) and not _grants(key_name, route, missing):
                    a, b = answers[other], answers[missing]
                    assert (a.status_code, a.json()["detail"].replace(other, "X")) == (
                        b.status_code,
                        b.json()["detail"].replace(missing, "X"),
                    ), (key_name, route.path)
    per_key = sum(3 if r.banked else 1 for r in ROUTES)
    assert checked == len(world.keys) * per_key
