"""The schemathesis pass over the keyed stack's OpenAPI, three ways (issue 18): every operation
with no key, with a wrong key, and with a key of every scope for another tenant's banks.

- No key, or a key the server never issued: 401 with `WWW-Authenticate: Bearer` everywhere but
  the open routes. The key is checked by an app-wide dependency, which FastAPI runs before it
  validates path, query and body, so even a schema-invalid request gets 401 (only a body that is
  not JSON at all would get 422 first; schemathesis' positive cases are always JSON).
- A key for `tenant-b-*` only: any bank outside it is 403 (tenant A's real bank is tried too), a
  route for every bank ('*': keys, metrics) is 403, listings (banks, audit, dead letters) show only
  banks of the pattern, and tenant A's secret never appears in an answer.

Every answer also passes the shared checks (no undocumented 5xx, schema conformance).
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import schemathesis

from tests.schemathesis_support import CHECKS, operations, run_each_operation
from tests.security.conftest import SECRET_A, A, AuthStack, B, World

pytestmark = pytest.mark.integration

EXAMPLES_PER_OPERATION = 4
OPEN = {("GET", "/health")}  # the app's only open route (recall_api/auth.py POLICY)
OTHER = "tenant-b-*"
EVERY_BANK = {("GET", "/metrics"), ("GET", "/v1/keys"), ("POST", "/v1/keys"), ("DELETE", "/v1/keys/{key}")}
LEAKS = ("Rosinante", "Lisbon")  # words of SECRET_A, tenant A's fact
assert all(word in SECRET_A for word in LEAKS)


@pytest.fixture(scope="module")
def ops(auth_stack: AuthStack) -> list[schemathesis.APIOperation]:
    found = operations(auth_stack.url)
    assert len(found) > 15
    return found


@pytest.fixture(scope="module")
def other_key(admin: httpx.Client, world: World) -> Iterator[str]:
    """Every scope, but only tenant B's banks (`world` has put tenant A's secret in place)."""
    r = admin.post(
        "/v1/keys", json={"name": "schemathesis-b", "scopes": ["read", "write", "admin"], "banks": [OTHER]}
    )
    assert r.status_code == 201, r.text
    yield r.json()["key"]
    admin.delete("/v1/keys/schemathesis-b")


def _key(case: schemathesis.Case) -> tuple[str, str]:
    return case.method.upper(), case.operation.path


def _header(response: schemathesis.Response, name: str) -> str:
    """A header of schemathesis' response (its values are lists)."""
    for key, values in response.headers.items():
        if key.lower() == name:
            return values[0] if isinstance(values, list) else values
    return ""


def _without_auth(case: schemathesis.Case) -> None:
    for name in [h for h in (case.headers or {}) if h.lower() == "authorization"]:
        del case.headers[name]


def _refused_unauthenticated(headers: dict[str, str]) -> Any:
    def check(case: schemathesis.Case) -> None:
        _without_auth(case)
        r = case.call_and_validate(checks=CHECKS, headers=headers, timeout=60)
        where = (case.method, case.formatted_path, r.status_code, r.text[:300])
        if _key(case) in OPEN:
            assert r.status_code == 200, where
            return
        assert r.status_code == 401, where
        assert _header(r, "www-authenticate") == "Bearer", where

    return check


def test_no_key_gets_401_on_every_operation(
    auth_stack: AuthStack, ops: list[schemathesis.APIOperation]
) -> None:
    failures = run_each_operation(ops, EXAMPLES_PER_OPERATION, _refused_unauthenticated({}))
    assert not failures, "\n\n".join(failures)


def test_wrong_key_gets_401_on_every_operation(
    auth_stack: AuthStack, world: World, ops: list[schemathesis.APIOperation]
) -> None:
    real = world.keys["rw-a"]
    bogus = {"Authorization": "Bearer tmpr_bogus_" + "x" * 40}
    wrong_secret = {"Authorization": f"Bearer {real[:-4]}{'AAAA' if not real.endswith('AAAA') else 'BBBB'}"}
    failures = run_each_operation(ops, EXAMPLES_PER_OPERATION, _refused_unauthenticated(bogus))
    failures += run_each_operation(ops, EXAMPLES_PER_OPERATION // 2, _refused_unauthenticated(wrong_secret))
    assert not failures, "\n\n".join(failures)


def _banks_in(payload: Any) -> Iterator[str | None]:
    """Every bank an answer names: `bank_id` fields, and a dead letter's `bank/...` key."""
    if isinstance(payload, dict):
        for name, value in payload.items():
            if name == "bank_id":
                yield value
            elif name == "key" and "topic" in payload:
                yield value.split("/", 1)[0] if isinstance(value, str) else None
            else:
                yield from _banks_in(value)
    elif isinstance(payload, list):
        for item in payload:
            yield from _banks_in(item)


def test_key_for_another_bank_reaches_only_its_own(
    auth_stack: AuthStack, other_key: str, ops: list[schemathesis.APIOperation]
) -> None:
    headers = {"Authorization": f"Bearer {other_key}"}

    def one(case: schemathesis.Case) -> None:
        r = case.call_and_validate(checks=CHECKS, headers=headers, timeout=60)
        where = (case.method, case.formatted_path, r.status_code, r.text[:300])
        assert not any(word in r.text for word in LEAKS), where
        bank = (case.path_parameters or {}).get("bank_id")
        if _key(case) in EVERY_BANK or (bank is not None and not fnmatch.fnmatchcase(bank, OTHER)):
            assert r.status_code == 403, where
            return
        if r.status_code < 300 and _header(r, "content-type").startswith("application/json"):
            seen = list(_banks_in(json.loads(r.text)))
            assert all(b is not None and fnmatch.fnmatchcase(b, OTHER) for b in seen), (where, seen)

    def check(case: schemathesis.Case) -> None:
        _without_auth(case)
        one(case)
        if "bank_id" in (case.path_parameters or {}):
            case.path_parameters["bank_id"] = A  # tenant A's real bank, holding SECRET_A
            one(case)

    failures = run_each_operation(ops, EXAMPLES_PER_OPERATION, check)
    assert not failures, "\n\n".join(failures)
    # Not vacuous: the key does list its own bank, and nothing else.
    with auth_stack.client(other_key) as client:
        listed = [bank["bank_id"] for bank in client.get("/v1/banks", params={"limit": 1000}).json()["items"]]
    assert B in listed and all(fnmatch.fnmatchcase(b, OTHER) for b in listed), listed
