"""`tempr api` serves on uvloop and httptools: uvicorn resolves the named options to them."""

from __future__ import annotations

import asyncio

import uvicorn
import uvloop
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from tempr.cli.services import UVICORN_OPTIONS


async def _app(scope: object, receive: object, send: object) -> None:  # pragma: no cover - never served
    raise AssertionError("not served")


def test_the_api_runs_on_uvloop_and_httptools() -> None:
    config = uvicorn.Config(_app, **UVICORN_OPTIONS)  # type: ignore[arg-type]
    config.load()
    assert config.http_protocol_class is HttpToolsProtocol
    factory = config.get_loop_factory()
    assert factory is not None
    loop = factory()
    try:
        assert isinstance(loop, uvloop.Loop)
        assert loop.run_until_complete(asyncio.sleep(0, result="ran")) == "ran"
    finally:
        loop.close()
