"""`tempr reflect` and `tempr banks ...`: a bank's answers and profile, through the Python client."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import httpx
import typer
from pydantic import BaseModel
from rich.table import Table

from tempr.cli.memory import BankOption, UrlOption, _client, _fail, console
from tempr.client import TemprAPIError

__all__ = ["register"]

JsonOption = Annotated[bool, typer.Option("--json", help="Print the server's JSON answer as is.")]
NameOption = Annotated[str | None, typer.Option(help="Display name.")]
RetentionOption = Annotated[
    int | None, typer.Option(min=0, help="Days to keep (0: forever, the default of a new bank).")
]
BackgroundOption = Annotated[str | None, typer.Option(help="Who the bank is, in the first person.")]
Trait = Annotated[int | None, typer.Option(min=1, max=5, help="1 (low) to 5 (high).")]
BiasOption = Annotated[
    float | None, typer.Option(min=0.0, max=1.0, help="How much traits shape opinions (0-1).")
]

banks_app = typer.Typer(help="Memory banks: list, show, create, set, delete.", no_args_is_help=True)


def _print_json(model: BaseModel) -> None:
    # Plain print, not rich: the output must stay parseable JSON.
    typer.echo(model.model_dump_json(indent=2))


def _read_schema(path: Path | None) -> dict[str, Any] | None:
    if path is None:
        return None
    try:
        schema = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise typer.BadParameter(f"{path}: {exc}", param_hint="--schema") from exc
    if not isinstance(schema, dict):
        raise typer.BadParameter(f"{path}: a JSON schema is an object", param_hint="--schema")
    return schema


def reflect(
    query: Annotated[str, typer.Argument(help="The question or topic to think about.")],
    bank: BankOption,
    schema: Annotated[
        Path | None, typer.Option(help="A JSON schema file: the answer comes back in that shape.")
    ] = None,
    context: Annotated[str | None, typer.Option(help="Extra context for this question only.")] = None,
    budget: Annotated[str | None, typer.Option(help="Recall depth: low, mid or high.")] = None,
    no_opinions: Annotated[bool, typer.Option(help="Do not store the opinions this answer forms.")] = False,
    as_json: JsonOption = False,
    url: UrlOption = None,
) -> None:
    """Answer in the bank's voice from what it remembers; shows the facts used and opinions formed."""
    options = {
        "response_schema": _read_schema(schema),
        "context": context,
        "budget": budget,
        "form_opinions": False if no_opinions else None,
    }
    try:
        with _client(url) as tempr:
            out = tempr.reflect(bank, query, **options)
    except (TemprAPIError, httpx.HTTPError) as exc:
        raise _fail(exc, url) from exc
    if as_json:
        _print_json(out)
        return
    if out.structured is not None:
        console.print_json(data=out.structured)
    else:
        console.print(out.text)
    if out.based_on:
        table = Table(title=f"based on {len(out.based_on)} facts")
        for column in ("type", "fact", "id"):
            table.add_column(column)
        for fact in out.based_on:
            table.add_row(fact.fact_type, fact.text, str(fact.id))
        console.print(table)
    for opinion in out.opinions_formed:
        console.print(f"opinion formed ({opinion.confidence:.2f}): {opinion.text}")


@banks_app.command("list")
def list_banks(
    limit: Annotated[int, typer.Option(help="Rows to show.")] = 100,
    offset: Annotated[int, typer.Option(help="Rows to skip.")] = 0,
    as_json: JsonOption = False,
    url: UrlOption = None,
) -> None:
    """Banks with a profile: id, name, traits, background."""
    try:
        with _client(url) as tempr:
            page = tempr.banks(limit=limit, offset=offset)
    except (TemprAPIError, httpx.HTTPError) as exc:
        raise _fail(exc, url) from exc
    if as_json:
        _print_json(page)
        return
    table = Table(title=f"{page.total} banks")
    # Ids and traits are read whole; names and backgrounds may wrap.
    table.add_column("bank", no_wrap=True)
    table.add_column("name")
    table.add_column("traits (S/L/E, bias)", no_wrap=True)
    table.add_column("background")
    table.add_column("updated", no_wrap=True)
    for b in page.items:
        d = b.disposition
        table.add_row(
            b.bank_id,
            b.name,
            f"{d.skepticism}/{d.literalism}/{d.empathy}, {d.bias_strength:.2f}",
            b.background if len(b.background) <= 80 else b.background[:77] + "...",
            f"{b.updated_at:%Y-%m-%d %H:%M}",
        )
    console.print(table)


@banks_app.command("show")
def show(
    bank: Annotated[str, typer.Argument(help="The bank.")],
    as_json: JsonOption = False,
    url: UrlOption = None,
) -> None:
    """A bank's profile and what it remembers (facts by type, entities, pending messages)."""
    try:
        with _client(url) as tempr:
            profile = tempr.bank(bank)
            stats = tempr.stats(bank)
    except (TemprAPIError, httpx.HTTPError) as exc:
        raise _fail(exc, url) from exc
    if as_json:
        typer.echo(
            json.dumps(
                {"bank": profile.model_dump(mode="json"), "stats": stats.model_dump(mode="json")}, indent=2
            )
        )
        return
    d = profile.disposition
    console.print(f"[bold]{profile.bank_id}[/bold] ({profile.name})")
    console.print(profile.background or "[dim]no background[/dim]")
    console.print(
        f"skepticism {d.skepticism}, literalism {d.literalism}, empathy {d.empathy}, "
        f"bias strength {d.bias_strength:.2f}"
    )
    config = profile.config.model_dump(exclude_none=True)
    if config:
        console.print("config: " + ", ".join(f"{k} {v}" for k, v in config.items()))
    console.print(
        "facts: "
        + (", ".join(f"{k} {v}" for k, v in stats.facts_by_type.items()) or "none")
        + f"; entities {stats.entities}; pending {stats.pending_events}"
    )


def _given(
    name: str | None,
    background: str | None,
    skepticism: float | None,
    literalism: float | None,
    empathy: float | None,
    bias_strength: float | None,
) -> dict[str, Any]:
    """The profile fields given on the command line; any trait given makes a disposition."""
    fields: dict[str, Any] = {k: v for k, v in (("name", name), ("background", background)) if v is not None}
    traits = {
        "skepticism": skepticism,
        "literalism": literalism,
        "empathy": empathy,
        "bias_strength": bias_strength,
    }
    disposition = {k: v for k, v in traits.items() if v is not None}
    return fields | ({"disposition": disposition} if disposition else {})


@banks_app.command("create")
def create(
    bank: Annotated[str, typer.Argument(help="The bank.")],
    name: NameOption = None,
    background: BackgroundOption = None,
    skepticism: Trait = None,
    literalism: Trait = None,
    empathy: Trait = None,
    bias_strength: BiasOption = None,
    url: UrlOption = None,
) -> None:
    """Create a bank, or replace its whole profile (unset options take their defaults; memories stay)."""
    # A whole profile: traits not given go back to their defaults.
    profile = {"disposition": {}} | _given(name, background, skepticism, literalism, empathy, bias_strength)
    try:
        with _client(url) as tempr:
            out = tempr.put_bank(bank, profile)
    except (TemprAPIError, httpx.HTTPError) as exc:
        raise _fail(exc, url) from exc
    console.print(f"bank {out.bank_id} ({out.name}) saved")


@banks_app.command("set")
def set_(
    bank: Annotated[str, typer.Argument(help="The bank.")],
    name: NameOption = None,
    background: BackgroundOption = None,
    skepticism: Trait = None,
    literalism: Trait = None,
    empathy: Trait = None,
    bias_strength: BiasOption = None,
    retention_days: RetentionOption = None,
    message_retention_days: RetentionOption = None,
    fact_retention_days: RetentionOption = None,
    url: UrlOption = None,
) -> None:
    """Change only the given fields; a new background is merged into the old one.
    `--retention-days N` keeps messages and facts N days (0: forever); the other two set one each."""
    patch = _given(name, background, skepticism, literalism, empathy, bias_strength)
    retention = {
        "message_retention_days": message_retention_days
        if message_retention_days is not None
        else retention_days,
        "fact_retention_days": fact_retention_days if fact_retention_days is not None else retention_days,
    }
    config = {k: (v or None) for k, v in retention.items() if v is not None}
    if config:
        patch["config"] = config
    if not patch:
        raise typer.BadParameter("nothing to change: give --name, --background, a trait or a retention")
    try:
        with _client(url) as tempr:
            out = tempr.patch_bank(bank, patch)
    except (TemprAPIError, httpx.HTTPError) as exc:
        raise _fail(exc, url) from exc
    console.print(f"bank {out.bank_id} ({out.name}) updated")


@banks_app.command("delete")
def delete(
    bank: Annotated[str, typer.Argument(help="The bank.")],
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    url: UrlOption = None,
) -> None:
    """Delete a bank and everything it remembers."""
    if not yes:
        typer.confirm(f"Delete bank {bank} and everything it remembers?", abort=True)
    try:
        with _client(url) as tempr:
            out = tempr.delete_bank(bank)
    except (TemprAPIError, httpx.HTTPError) as exc:
        raise _fail(exc, url) from exc
    removed = ", ".join(f"{table} {n}" for table, n in out.deleted.items() if n) or "nothing else"
    console.print(f"deleted bank {out.bank_id}: {removed}")


def register(app: typer.Typer) -> None:
    app.command()(reflect)
    app.add_typer(banks_app, name="banks")
