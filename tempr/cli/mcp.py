"""`tempr mcp`: tempr's memory tools for an agent, over stdio (MCP), backed by a running server."""

from __future__ import annotations

from typing import Annotated

import typer

from tempr.cli.ingest import default_url

__all__ = ["register"]


def mcp(
    bank: Annotated[
        str | None,
        typer.Option("--bank", "-b", help="Fix every tool to this bank (otherwise each call names one)."),
    ] = None,
    url: Annotated[str | None, typer.Option(help="Server URL (default $TEMPR_URL or :8000).")] = None,
) -> None:
    """Serve the MCP tools (retain, recall, reflect, banks, ...) on stdin/stdout for an agent."""
    from tempr.client import AsyncTemprClient
    from tempr.recall_api.mcp_server import build_mcp_server

    target = url or default_url()
    # stdout carries the protocol: the server logs only warnings, and only to stderr.
    server = build_mcp_server(
        AsyncTemprClient(target, max_retries=2), url=target, bank=bank, log_level="WARNING"
    )
    server.run("stdio")


def register(app: typer.Typer) -> None:
    app.command()(mcp)
