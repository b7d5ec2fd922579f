"""Hostile and clumsy inputs against the live stack (issue 15, R1, R3, R5, R6): each is refused
with a 4xx naming what is wrong, and afterwards the stack is healthy and a good message still
becomes a fact."""

from __future__ import annotations

import json
import uuid

import httpx
import pytest

from tests.conftest import wait_until

pytestmark = pytest.mark.integration

JSON = {"content-type": "application/json"}


def _facts(api: httpx.Client, bank: str) -> list[dict]:
    return api.get(f"/v1/banks/{bank}/memories", params={"limit": 1000}).json()["items"]


def assert_still_working(api: httpx.Client) -> None:
    health = api.get("/health")
    assert health.status_code == 200 and health.json()["status"] == "ok", health.text
    bank = f"good-{uuid.uuid4().hex[:8]}"
    r = api.post(
        f"/v1/banks/{bank}/memories", json={"items": [{"content": "Dana planted four lemon trees."}]}
    )
    assert r.status_code == 202, r.text
    wait_until(lambda: len(_facts(api, bank)) >= 1, timeout=60)


def assert_refused(r: httpx.Response, field: str, status: int = 422) -> None:
    assert r.status_code == status, r.text
    assert field in r.text, r.text


def test_r1_metadata_larger_than_the_broker_is_refused(api: httpx.Client, bank: str) -> None:
    item = {"content": "Hello there.", "metadata": {"blob": "x" * 1_100_000}}
    assert_refused(api.post(f"/v1/banks/{bank}/memories", json={"items": [item]}), "metadata")
    assert_still_working(api)


def test_r3_large_metadata_is_refused_and_never_copied_into_facts(api: httpx.Client, bank: str) -> None:
    five = "Ana fixed the bike. Ana painted the fence. Ana baked bread. Ana read a novel. Ana swam far."
    big = {"content": five, "metadata": {"blob": "x" * 300_000}}
    assert_refused(api.post(f"/v1/banks/{bank}/memories", json={"items": [big]}), "metadata")
    near_limit = {"content": five, "metadata": {"blob": "y" * 15_000}}
    assert api.post(f"/v1/banks/{bank}/memories", json={"items": [near_limit]}).status_code == 202
    wait_until(lambda: len(_facts(api, bank)) >= 1, timeout=60)
    assert all("blob" not in f["metadata"] for f in _facts(api, bank))
    assert_still_working(api)


def _raw(api: httpx.Client, method: str, url: str, body: str | None = None) -> httpx.Response:
    return api.request(method, url, content=None if body is None else body.encode(), headers=JSON)


R5 = [
    ("POST", "/v1/banks/{b}/recall", '{"query": "x", "max_tokens": NaN}', "max_tokens"),
    ("POST", "/v1/banks/{b}/recall", '{"query": "x", "max_tokens": Infinity}', "max_tokens"),
    ("PUT", "/v1/banks/{b}", '{"disposition": {"bias_strength": NaN}}', "bias_strength"),
    ("PUT", "/v1/banks/{b}", '{"disposition": {"bias_strength": -Infinity}}', "bias_strength"),
    ("POST", "/v1/banks/{b}/memories", '{"items": [{"content": "a\\u0000b"}]}', "content"),
    ("POST", "/v1/banks/{b}/memories", '{"items": [{"content": "hi", "speaker": "\\u0000"}]}', "speaker"),
    ("POST", "/v1/banks/{b}/memories", '{"items": [{"content": "\\ud800"}]}', "content"),
    ("PUT", "/v1/banks/{b}", '{"name": "\\u0000"}', "name"),
    ("POST", "/v1/banks/a%00b/memories", '{"items": [{"content": "hi"}]}', "bank_id"),
    ("GET", "/v1/banks/{b}/memories?offset=100000000000000000000", None, "offset"),
    ("GET", "/v1/banks?offset=100000000000000000000", None, "offset"),
    ("DELETE", "/v1/banks/{b}/documents/%00%00", None, "document_id"),
    ("POST", "/v1/banks/{b}/recall", '{"query": "x", "after": "j99999999999999999999"}', "token"),
]


@pytest.mark.parametrize(("method", "url", "body", "field"), R5)
def test_r5_no_500_on_hostile_values(
    api: httpx.Client, bank: str, method: str, url: str, body: str | None, field: str
) -> None:
    r = _raw(api, method, url.format(b=bank), body)
    assert 400 <= r.status_code < 500, r.text
    assert field in r.text


def test_r5_stack_still_works_after_hostile_values(api: httpx.Client, bank: str) -> None:
    for method, url, body, _ in R5:
        _raw(api, method, url.format(b=bank), body)
    assert_still_working(api)


@pytest.mark.parametrize(
    ("item", "field"),
    [
        ({"content": "Hi.", "timestamp": "0001-01-01T00:00:00Z"}, "timestamp"),
        ({"content": "Hi.", "timestamp": "9999-12-31T23:59:59Z"}, "timestamp"),
        ({"content": "Hi.", "metadata": json.loads('{"a":' * 200 + "1" + "}" * 200)}, "metadata"),
    ],
)
def test_r6_what_the_pipeline_cannot_finish_is_never_accepted(
    api: httpx.Client, bank: str, item: dict, field: str
) -> None:
    assert_refused(api.post(f"/v1/banks/{bank}/memories", json={"items": [item]}), field)
    r = api.post(f"/v1/banks/{bank}/recall", json={"query": "x", "query_timestamp": item.get("timestamp")})
    assert r.status_code in (200, 422), r.text
    assert_still_working(api)


def test_body_larger_than_the_limit_is_413(api: httpx.Client, bank: str) -> None:
    body = json.dumps({"items": [{"content": "x" * 100_000}] * 90})  # ~9 MB > 8 MB
    assert_refused(_raw(api, "POST", f"/v1/banks/{bank}/memories", body), "TEMPR_MAX_BODY_BYTES", 413)


def test_loopback_bind_refuses_foreign_host_and_origin(api: httpx.Client) -> None:
    assert api.get("/v1/banks", headers={"host": "evil.example:8000"}).status_code == 421
    assert api.get("/v1/banks", headers={"origin": "http://evil.example"}).status_code == 403
    assert (
        api.get("/v1/banks", headers={"origin": f"http://127.0.0.1:{api.base_url.port}"}).status_code == 200
    )
    assert api.get("/v1/banks", headers={"host": "localhost"}).status_code == 200
