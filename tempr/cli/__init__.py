"""The `tempr` command line (typer + rich)."""

from __future__ import annotations

import typer

from tempr.cli import banks, ingest, keys, lifecycle, mcp, memory, operations, services

__all__ = ["app", "main"]

app = typer.Typer(
    name="tempr",
    help="tempr: long-term memory for AI agents, built as a streaming pipeline.",
    no_args_is_help=True,
    add_completion=False,
)
services.register(app)
ingest.register(app)
memory.register(app)
banks.register(app)
lifecycle.register(app, banks.banks_app)
mcp.register(app)
operations.register(app)
keys.register(app)


def main() -> None:
    app()
