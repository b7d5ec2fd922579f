"""`tempr ingest`: send a file of conversations to a running server."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Annotated

import httpx
import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from tempr.client import api_key_headers
from tempr.conversations import read_conversations

__all__ = ["ingest", "register"]

console = Console(stderr=True)
_BATCH = 200


def default_url() -> str:
    return os.environ.get("TEMPR_URL", "http://127.0.0.1:8000")


def ingest(
    file: Annotated[Path, typer.Argument(exists=True, dir_okay=False, help="JSON or JSONL: ours or LoCoMo.")],
    bank: Annotated[str, typer.Option("--bank", "-b", help="Bank to retain into.")],
    url: Annotated[str | None, typer.Option(help="Server URL (default $TEMPR_URL or :8000).")] = None,
    wait: Annotated[bool, typer.Option(help="Return only when everything is materialized.")] = False,
    timeout: Annotated[float, typer.Option(help="Longest --wait, in seconds.")] = 1800.0,
) -> None:
    """Retain every message of FILE into BANK, with a progress bar."""
    conversations = read_conversations(file)
    total = sum(len(c.items) for c in conversations)
    base = url or default_url()
    started = time.monotonic()
    with httpx.Client(base_url=base, timeout=60, headers=api_key_headers()) as client:
        try:
            client.get("/health")
        except httpx.HTTPError as exc:
            console.print(f"[red]cannot reach tempr at {base}[/red]: {exc}. Is `tempr up` running?")
            raise typer.Exit(2) from exc
        with Progress(
            TextColumn("[bold]retaining"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
        ) as progress:
            task = progress.add_task("retain", total=total)
            for conversation in conversations:
                for start in range(0, len(conversation.items), _BATCH):
                    items = conversation.items[start : start + _BATCH]
                    r = client.post(
                        f"/v1/banks/{bank}/memories",
                        json={"items": [i.model_dump(mode="json", exclude_none=True) for i in items]},
                    )
                    if r.status_code != 202:
                        console.print(f"[red]retain failed ({r.status_code})[/red]: {r.text[:500]}")
                        raise typer.Exit(1)
                    progress.advance(task, len(items))
        if wait:
            _wait_materialized(client, bank, timeout)
        stats = client.get(f"/v1/banks/{bank}/stats").json()
    console.print(
        f"{total} messages from {len(conversations)} conversations in {time.monotonic() - started:.1f}s; "
        f"bank {bank}: {stats['facts']} facts, {stats['entities']} entities, "
        f"links {stats['links_by_type']}, pending {stats['pending_events']}"
    )


def _wait_materialized(client: httpx.Client, bank: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    with console.status("waiting for the pipeline to materialize everything…") as status:
        while True:
            pending = client.get(f"/v1/banks/{bank}/stats").json()["pending_events"]
            if pending == 0:
                return
            status.update(f"waiting for the pipeline: {pending} messages still in flight…")
            if time.monotonic() > deadline:
                console.print(f"[red]still {pending} messages in flight after {timeout:.0f}s[/red]")
                raise typer.Exit(1)
            time.sleep(0.5)


def register(app: typer.Typer) -> None:
    app.command()(ingest)
