"""While Postgres cannot be reached the API answers 503 with Retry-After (never a 500), and the
client retries it. The outage is a real cut: the API's pool talks to the real Postgres through
a TCP relay that this test closes and reopens."""

from __future__ import annotations

import asyncio
import contextlib
from urllib.parse import parse_qs, urlparse

import httpx
import pytest

from tempr.client import AsyncTemprClient
from tempr.recall_api.main import create_app
from tempr.streams.runtime import Supervisor
from tests.conftest import free_port

pytestmark = pytest.mark.integration


class Relay:
    """host:port → Postgres (TCP or unix socket); `cut()` drops every connection and refuses new ones."""

    def __init__(self, database_url: str) -> None:
        url = urlparse(database_url)
        socket_dir = parse_qs(url.query).get("host", [None])[0]
        self.unix = f"{socket_dir}/.s.PGSQL.{url.port or 5432}" if socket_dir else None
        self.target = (url.hostname or "127.0.0.1", url.port or 5432)
        self.port = free_port()
        self.url = url._replace(netloc=f"{url.username or 'postgres'}:{url.password or ''}@127.0.0.1:{self.port}",
                                query="").geturl()  # fmt: skip
        self.server: asyncio.Server | None = None
        self.writers: list[asyncio.StreamWriter] = []

    async def open(self) -> None:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", self.port)

    async def cut(self) -> None:
        assert self.server is not None
        self.server.close()
        for w in self.writers:
            w.close()
        self.writers.clear()
        await self.server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.unix:
            up_reader, up_writer = await asyncio.open_unix_connection(self.unix)
        else:
            up_reader, up_writer = await asyncio.open_connection(*self.target)
        self.writers += [writer, up_writer]

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            with contextlib.suppress(Exception):
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            dst.close()

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))


async def test_database_outage_is_503_with_retry_after_and_the_client_retries(stack: Supervisor) -> None:
    assert stack.settings.database_url
    relay = Relay(stack.settings.database_url)
    await relay.open()
    app = create_app(stack.settings.model_copy(update={"database_url": relay.url}))
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
            assert (await http.get("/v1/banks")).status_code == 200
            await relay.cut()
            for method, path, body in [
                ("GET", "/v1/banks", None),
                ("GET", "/v1/banks/outage/memories", None),
                ("POST", "/v1/banks/outage/memories", {"items": [{"content": "Kept for later."}]}),
            ]:
                r = await http.request(method, path, json=body)
                assert r.status_code == 503, (path, r.status_code, r.text)
                assert int(r.headers["retry-after"]) > 0 and "database" in r.json()["detail"]
            assert (await http.get("/health")).status_code == 503

            # The client waits (Retry-After) and tries again: once Postgres is back it succeeds.
            client = AsyncTemprClient("http://127.0.0.1", transport=transport, max_retries=5)
            call = asyncio.create_task(client.banks())
            await asyncio.sleep(0.5)
            assert not call.done()
            await relay.open()
            page = await asyncio.wait_for(call, timeout=60)
            assert page.total >= 0
