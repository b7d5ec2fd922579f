"""The Python client against the live API (and a flaky real HTTP server for retries)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from tempr.client import AsyncTemprClient, TemprAPIError, TemprClient

pytestmark = pytest.mark.integration


def test_sync_client_retains_and_reads_its_own_write(api: httpx.Client, bank: str) -> None:
    with TemprClient(str(api.base_url)) as tempr:
        retained = tempr.retain(bank, "Noor moved to Lisbon in May 2024.", speaker="Noor", message_id="n1")
        assert retained.accepted == 1
        found = tempr.recall(bank, "Where did Noor move?", after=retained.consistency.token)
        assert found.results and "Lisbon" in found.results[0].text
        assert found.results[0].source_message_ids == ["n1"]
        assert tempr.memories(bank).total == 1
        assert tempr.stats(bank).pending_events == 0
        assert any(e.canonical_name == "Noor" for e in tempr.entities(bank).items)
        with pytest.raises(TemprAPIError) as bad:
            tempr.recall(bank, "x", preset="nope")
        assert bad.value.status_code == 400 and "unknown preset" in str(bad.value.detail)
        with pytest.raises(TemprAPIError) as missing:
            tempr.entity(bank, "00000000-0000-0000-0000-000000000000")
        assert missing.value.status_code == 404


async def test_async_client_has_the_same_surface(api: httpx.Client, bank: str) -> None:
    async with AsyncTemprClient(str(api.base_url)) as tempr:
        assert (await tempr.health()).status == "ok"
        retained = await tempr.retain(bank, [{"content": "Omar plays the oud.", "message_id": "o1"}])
        found = await tempr.recall(bank, "What instrument does Omar play?", after=retained.consistency.token)
        assert "oud" in found.results[0].text


class _Flaky(BaseHTTPRequestHandler):
    failures = 2
    status = 503
    requests = 0

    def do_GET(self) -> None:
        _Flaky.requests += 1
        if _Flaky.failures > 0:
            _Flaky.failures -= 1
            self.send_response(_Flaky.status)
            self.send_header("Retry-After", "0")
            self.end_headers()
            self.wfile.write(b'{"detail": "busy"}')
            return
        body = json.dumps({"status": "ok", "database": "ok", "broker": "ok"}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_: object) -> None:
        pass


@pytest.fixture
def flaky_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Flaky)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()


def test_503_is_retried_then_gives_up_with_the_servers_message(flaky_server: str) -> None:
    _Flaky.failures, _Flaky.status = 2, 503
    with TemprClient(flaky_server, backoff_s=0.01) as tempr:
        assert tempr.health().status == "ok"
    _Flaky.failures = 5
    with (
        TemprClient(flaky_server, max_retries=1, backoff_s=0.01) as tempr,
        pytest.raises(TemprAPIError) as err,
    ):
        tempr.health()
    assert err.value.status_code == 503 and err.value.detail == "busy"


def test_501_is_not_retried(flaky_server: str) -> None:
    _Flaky.failures, _Flaky.status, _Flaky.requests = 5, 501, 0
    with TemprClient(flaky_server, backoff_s=0.01) as tempr, pytest.raises(TemprAPIError) as err:
        tempr.health()
    assert err.value.status_code == 501 and err.value.detail == "busy"
    assert _Flaky.requests == 1
