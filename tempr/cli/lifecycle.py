"""`tempr memory`, `tempr forget`, `tempr correct` and `tempr banks export|import`: a memory's
lifecycle through the Python client."""

from __future__ import annotations

import sys
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any

import httpx
import typer
from rich.table import Table

from tempr.cli.memory import BankOption, UrlOption, _client, _fail, console
from tempr.client import TemprAPIError, TemprClient

__all__ = ["register"]


def _run(url: str | None, call: Any) -> Any:
    try:
        with _client(url) as tempr:
            return call(tempr)
    except (TemprAPIError, httpx.HTTPError) as exc:
        raise _fail(exc, url) from exc


def memory(
    memory_id: Annotated[str, typer.Argument(help="The fact's id (from recall or `GET .../memories`).")],
    bank: BankOption,
    url: UrlOption = None,
) -> None:
    """Show one fact: provenance, entities, links and earlier versions."""
    out = _run(url, lambda t: t.memory(bank, memory_id))
    console.print(f"[bold]{out.text}[/bold]  ({out.fact_type}, sources {', '.join(out.source_message_ids)})")
    if out.entities:
        console.print("entities: " + ", ".join(e.canonical_name for e in out.entities))
    console.print(f"links: {len(out.links)}")
    for version in out.history:
        console.print(f"  was ({version.replaced_at:%Y-%m-%d %H:%M}): {version.text}  {version.reason}")


def forget(
    bank: BankOption,
    memory_id: Annotated[str | None, typer.Option("--memory", help="Forget one fact by its id.")] = None,
    message: Annotated[str | None, typer.Option(help="Forget a message and every fact made from it.")] = None,
    conversation: Annotated[str | None, typer.Option(help="Forget every message of a conversation.")] = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    url: UrlOption = None,
) -> None:
    """Forget for good: a fact, a message or a conversation (tombstoned against replay and resend)."""
    given = [
        (kind, v)
        for kind, v in (("fact", memory_id), ("message", message), ("conversation", conversation))
        if v
    ]
    if len(given) != 1:
        raise typer.BadParameter("give exactly one of --memory, --message, --conversation")
    kind, target = given[0]
    if not yes:
        typer.confirm(f"Forget {kind} {target} of bank {bank} for good?", abort=True)
    calls = {
        "fact": lambda t: t.forget_memory(bank, target),
        "message": lambda t: t.forget_message(bank, target),
        "conversation": lambda t: t.forget_conversation(bank, target),
    }
    out = _run(url, calls[kind])
    console.print(
        f"forgot {kind} {target}: facts {out.facts_removed}, observations {out.observations_removed}, "
        f"messages {out.messages_removed}, rebuilt {out.messages_rebuilt}  token {out.consistency.token}"
    )


def correct(
    memory_id: Annotated[str, typer.Argument(help="The fact's id.")],
    bank: BankOption,
    text: Annotated[str | None, typer.Option(help="The corrected text.")] = None,
    occurred_start: Annotated[datetime | None, typer.Option(help="When it began (ISO time).")] = None,
    occurred_end: Annotated[datetime | None, typer.Option(help="When it ended (ISO time).")] = None,
    tag: Annotated[list[str] | None, typer.Option(help="Tags (repeat); replaces the fact's tags.")] = None,
    reason: Annotated[str, typer.Option(help="Why, kept in the fact's history.")] = "",
    url: UrlOption = None,
) -> None:
    """Correct a fact; the old version is kept in its history. Prints the consistency token."""
    changes: dict[str, Any] = {
        k: v
        for k, v in (("text", text), ("occurred_start", occurred_start), ("occurred_end", occurred_end))
        if v
    }
    if tag is not None:
        changes["tags"] = tag
    if not changes:
        raise typer.BadParameter("nothing to correct: give --text, --occurred-start, --occurred-end or --tag")
    for key in ("occurred_start", "occurred_end"):
        if key in changes and changes[key].tzinfo is None:
            raise typer.BadParameter(
                f"--{key.replace('_', '-')} needs a time zone (e.g. 2024-05-01T00:00:00Z)"
            )
    out = _run(url, lambda t: t.correct_memory(bank, memory_id, reason=reason, **changes))
    console.print(f"correction {out.correction_id} accepted  token {out.consistency.token}")


def export(
    bank: Annotated[str, typer.Argument(help="The bank.")],
    output: Annotated[Path | None, typer.Option("--output", "-o", help="A file (default: stdout).")] = None,
    url: UrlOption = None,
) -> None:
    """Export the bank as versioned JSON lines: `tempr banks export B > bank.jsonl`."""

    def write(tempr: TemprClient) -> int:
        if output is None:
            return tempr.export_bank(bank, sys.stdout.buffer)
        with output.open("wb") as out:
            return tempr.export_bank(bank, out)

    written = _run(url, write)
    if output is not None:
        console.print(f"exported bank {bank} to {output} ({written} bytes)")


def import_(
    file: Annotated[Path, typer.Argument(exists=True, dir_okay=False, help="An export (JSON lines).")],
    as_: Annotated[
        str | None, typer.Option("--as", help="Import under this bank id (default: the exported one).")
    ] = None,
    url: UrlOption = None,
) -> None:
    """Import an export: same ids, idempotent, and a cut import completes when run again."""
    with file.open("rb") as source:
        header = source.readline()
    bank = as_ or _exported_bank(header)
    with file.open("rb") as source:
        out = _run(url, lambda t: t.import_bank(bank, source))
    console.print(f"imported bank {out.bank_id} (from {out.source_bank_id}, format v{out.format_version})")
    table = Table()
    for column in ("kind", "records", "written"):
        table.add_column(column)
    for kind, count in out.records.items():
        table.add_row(kind, str(count), str(out.written.get(kind, "")))
    console.print(table)
    if not out.complete:
        console.print(
            "[yellow]the file ends before its end record: it was cut; import a complete one[/yellow]"
        )


def _exported_bank(header: bytes) -> str:
    import json

    try:
        return str(json.loads(header)["bank_id"])
    except (ValueError, KeyError, TypeError):
        raise typer.BadParameter(
            "the file does not start with a tempr export header; is it an export?"
        ) from None


def register(app: typer.Typer, banks_app: typer.Typer) -> None:
    app.command()(memory)
    app.command()(forget)
    app.command()(correct)
    banks_app.command("export")(export)
    banks_app.command("import")(import_)
