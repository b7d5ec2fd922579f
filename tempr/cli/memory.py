"""`tempr retain` and `tempr recall`: talk to a running server through the Python client."""

from __future__ import annotations

from typing import Annotated

import httpx
import typer
from rich.console import Console
from rich.table import Table

from tempr.cli.ingest import default_url
from tempr.client import TemprAPIError, TemprClient

__all__ = ["register"]

console = Console()
errors = Console(stderr=True)

UrlOption = Annotated[str | None, typer.Option(help="Server URL (default $TEMPR_URL or :8000).")]
BankOption = Annotated[str, typer.Option("--bank", "-b", help="The memory bank.")]


def _client(url: str | None) -> TemprClient:
    return TemprClient(url or default_url(), max_retries=1)


def _fail(exc: Exception, url: str | None) -> typer.Exit:
    if isinstance(exc, TemprAPIError):
        errors.print(f"[red]tempr refused ({exc.status_code})[/red]: {exc.detail}")
    else:
        errors.print(
            f"[red]cannot reach tempr at {url or default_url()}[/red]: {exc}. Is `tempr up` running?"
        )
    return typer.Exit(2)


def retain(
    text: Annotated[str, typer.Argument(help="What to remember.")],
    bank: BankOption,
    speaker: Annotated[str | None, typer.Option(help="Who said it.")] = None,
    conversation: Annotated[str | None, typer.Option(help="Conversation id.")] = None,
    url: UrlOption = None,
) -> None:
    """Retain one message; prints its event id and consistency token."""
    try:
        with _client(url) as tempr:
            out = tempr.retain(bank, text, speaker=speaker, conversation_id=conversation)
    except (TemprAPIError, httpx.HTTPError) as exc:
        raise _fail(exc, url) from exc
    console.print(f"accepted {out.event_ids[0]}  token {out.consistency.token}")


def recall(
    query: Annotated[str, typer.Argument(help="What to look for.")],
    bank: BankOption,
    budget: Annotated[str, typer.Option(help="low, mid or high.")] = "mid",
    max_tokens: Annotated[int, typer.Option(help="Token budget of the answer.")] = 4096,
    limit: Annotated[int, typer.Option(help="Rows to show.")] = 10,
    trace: Annotated[bool, typer.Option(help="Show what each arm found and the stage timings.")] = False,
    after: Annotated[str | None, typer.Option(help="Wait for this consistency token first.")] = None,
    url: UrlOption = None,
) -> None:
    """Recall facts, as a table (rank, score, arms, date, text, sources)."""
    try:
        with _client(url) as tempr:
            out = tempr.recall(bank, query, budget=budget, max_tokens=max_tokens, trace=trace, after=after)
    except (TemprAPIError, httpx.HTTPError) as exc:
        raise _fail(exc, url) from exc
    table = Table(title=f"{len(out.results)} facts, {out.tokens_used} tokens")
    for column in ("#", "score", "arms", "when", "fact", "sources"):
        table.add_column(column)
    for rank, fact in enumerate(out.results[:limit], start=1):
        when = fact.occurred_start or fact.mentioned_at
        arms = " ".join(f"{arm}:{r}" for arm, r in fact.scores.arms.items())
        table.add_row(
            str(rank),
            f"{fact.scores.final:.3f}",
            arms,
            f"{when:%Y-%m-%d}" if when else "",
            fact.text,
            ", ".join(fact.source_message_ids),
        )
    console.print(table)
    if trace and out.trace:
        arms_table = Table(title="arms")
        for column in ("arm", "found", "ms", "note"):
            arms_table.add_column(column)
        for arm, info in out.trace["arms"].items():
            arms_table.add_row(
                arm, str(info.get("count")), str(info.get("elapsed_ms")), str(info.get("note") or "")
            )
        console.print(arms_table)
        console.print("timings (ms): " + ", ".join(f"{k} {v}" for k, v in out.trace["timings_ms"].items()))


def register(app: typer.Typer) -> None:
    app.command()(retain)
    app.command()(recall)
