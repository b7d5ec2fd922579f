"""`tempr replay` (rebuild a bank from its messages) and `tempr dlq` (inspect and replay failures).

Every command talks to a running server (`--url` or $TEMPR_URL) through the Python client.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated

import httpx
import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from tempr.cli.ingest import default_url
from tempr.cli.memory import UrlOption, _fail
from tempr.client import TemprAPIError, TemprClient
from tempr.schemas.api import BankStats
from tempr.streams.topics import DLQ

__all__ = ["register"]


# Made per command, not at import, so that tables are as wide as the terminal at run time.
def _stdout() -> Console:
    return Console()


errors = Console(stderr=True)

dlq = typer.Typer(
    help="Records that failed in the pipeline: list them, send them again.", no_args_is_help=True
)


def _client(url: str | None) -> TemprClient:
    # As `tempr retain`'s client, with a longer timeout: a big bank's replay clears its facts
    # in one transaction before it answers.
    return TemprClient(url or default_url(), timeout=120, max_retries=1)


# --------------------------------------------------------------------------- replay


@dataclass(frozen=True)
class _Snapshot:
    stats: BankStats
    facts: dict[str, str]  # id → text


def _snapshot(tempr: TemprClient, bank: str) -> _Snapshot:
    stats = tempr.stats(bank)
    facts: dict[str, str] = {}
    while True:
        page = tempr.memories(bank, limit=1000, offset=len(facts))
        facts.update((str(item.id), item.text) for item in page.items)
        if not page.items or len(facts) >= page.total:
            return _Snapshot(stats, facts)


def _parse_since(value: str | None) -> datetime | None:
    if value is None:
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError as exc:
        raise typer.BadParameter(f"not an ISO 8601 date or time: {value!r}", param_hint="--from") from exc
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def replay(
    bank: Annotated[str, typer.Option("--bank", "-b", help="The bank to rebuild.")],
    since: Annotated[
        str | None,
        typer.Option(
            "--from",
            help="Only messages accepted at or after this ISO 8601 time (UTC unless it says), "
            "plus those sharing a fact with them. Default: every message.",
        ),
    ] = None,
    timeout: Annotated[float, typer.Option(help="Longest wait for the rebuild, in seconds.")] = 1800.0,
    show: Annotated[int, typer.Option(help="Removed and new facts to list.")] = 5,
    url: UrlOption = None,
) -> None:
    """Rebuild BANK's facts from its stored messages through the current pipeline (after a
    change of extractor, embedding model or chunking), then show what changed."""
    moment = _parse_since(since)
    try:
        with _client(url) as tempr:
            before = _snapshot(tempr, bank)
            out = tempr.replay(bank, from_=moment)
            _follow(tempr, bank, out.messages_replayed, timeout)
            after = _snapshot(tempr, bank)
    except (TemprAPIError, httpx.HTTPError) as exc:
        raise _fail(exc, url) from exc
    _stdout().print(
        f"replayed {out.messages_replayed} messages of {bank}: removed {out.facts_removed} facts, "
        f"{out.observations_removed} observations, {out.entities_removed} entities, "
        f"{out.chunks_removed} chunks, then rebuilt (token {out.consistency.token})"
    )
    _stdout().print(_changes_table(before, after))
    _print_fact_diff(before, after, show)


def _follow(tempr: TemprClient, bank: str, total: int, timeout: float) -> None:
    """A progress bar over the journal: replayed messages still pending → materialized."""
    deadline = time.monotonic() + timeout
    with Progress(
        TextColumn("[bold]rebuilding"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=errors,
    ) as progress:
        task = progress.add_task("rebuild", total=total)
        while True:
            pending = tempr.stats(bank).pending_events
            progress.update(task, completed=max(0, total - pending))
            if pending == 0:
                return
            if time.monotonic() > deadline:
                errors.print(f"[red]still {pending} messages in flight after {timeout:.0f}s[/red]")
                raise typer.Exit(1)
            time.sleep(0.5)


def _changes_table(before: _Snapshot, after: _Snapshot) -> Table:
    table = Table(title="what changed")
    for column, justify in (("", "left"), ("before", "right"), ("after", "right"), ("change", "right")):
        table.add_column(column, justify=justify)  # type: ignore[arg-type]

    def row(label: str, old: int, new: int) -> None:
        delta = new - old
        change = "" if delta == 0 else f"[green]+{delta}[/green]" if delta > 0 else f"[red]{delta}[/red]"
        table.add_row(label, str(old), str(new), change)

    old, new = before.stats, after.stats
    row("facts", old.facts, new.facts)
    for kind in sorted(set(old.facts_by_type) | set(new.facts_by_type)):
        row(f"  {kind}", old.facts_by_type.get(kind, 0), new.facts_by_type.get(kind, 0))
    row("entities", old.entities, new.entities)
    for kind in sorted(set(old.links_by_type) | set(new.links_by_type)):
        row(f"  {kind} links", old.links_by_type.get(kind, 0), new.links_by_type.get(kind, 0))
    kept = before.facts.keys() & after.facts.keys()
    rewritten = sum(1 for fact_id in kept if before.facts[fact_id] != after.facts[fact_id])
    table.add_section()
    table.add_row("facts kept (same id)", "", str(len(kept)), f"{rewritten} rewritten" if rewritten else "")
    table.add_row("facts removed", "", str(len(before.facts.keys() - after.facts.keys())), "")
    table.add_row("facts new", "", str(len(after.facts.keys() - before.facts.keys())), "")
    return table


def _print_fact_diff(before: _Snapshot, after: _Snapshot, show: int) -> None:
    removed = sorted(before.facts.keys() - after.facts.keys(), key=before.facts.__getitem__)
    added = sorted(after.facts.keys() - before.facts.keys(), key=after.facts.__getitem__)
    if not removed and not added:
        _stdout().print("the rebuilt facts are the same as before (same ids, same texts)")
        return
    for title, ids, texts, colour in (
        ("removed", removed, before.facts, "red"),
        ("new", added, after.facts, "green"),
    ):
        for fact_id in ids[:show]:
            _stdout().print(
                f"[{colour}]{'-' if title == 'removed' else '+'}[/{colour}] {fact_id}  {texts[fact_id]}"
            )
        if len(ids) > show:
            _stdout().print(f"  … and {len(ids) - show} more {title} facts")


# --------------------------------------------------------------------------- dlq


@dlq.command("list")
def dlq_list(
    limit: Annotated[int, typer.Option(help="Letters to show, newest first.")] = 50,
    pending: Annotated[bool, typer.Option(help="Only letters not replayed yet.")] = False,
    url: UrlOption = None,
) -> None:
    """Dead letters: where each record failed, why, and whether it was replayed."""
    try:
        with _client(url) as tempr:
            letters = tempr.dead_letters(limit=limit, replayed=False if pending else None)
    except (TemprAPIError, httpx.HTTPError) as exc:
        raise _fail(exc, url) from exc
    table = Table(title=f"{len(letters)} dead letters")
    table.add_column("id", no_wrap=True, min_width=36)  # whole, to paste into `tempr dlq replay`
    for column in ("failed at", "stage", "record", "error", "replayed at"):
        table.add_column(column, overflow="fold")
    for letter in letters:
        table.add_row(
            str(letter.id),
            _short_time(letter.failed_at),
            letter.stage,
            f"{letter.topic}[{letter.partition}]@{letter.offset}",
            letter.error[:200],
            _short_time(letter.replayed_at) if letter.replayed_at else "",
        )
    _stdout().print(table)


@dlq.command("replay")
def dlq_replay(
    ids: Annotated[list[str] | None, typer.Argument(help="Dead letter ids (see `tempr dlq list`).")] = None,
    all_: Annotated[bool, typer.Option("--all", help="Every letter not replayed yet.")] = False,
    force: Annotated[bool, typer.Option(help="Replay letters that were replayed before too.")] = False,
    url: UrlOption = None,
) -> None:
    """Publish failed records again, unchanged, to the topic they failed on."""
    if bool(ids) == all_:
        raise typer.BadParameter("give dead letter ids or --all (not both)")
    refused = 0
    try:
        with _client(url) as tempr:
            targets = ids or _unreplayed_ids(tempr)
            table = Table(title=f"replaying {len(targets)} dead letters")
            table.add_column("id", no_wrap=True, min_width=36)
            for column in ("result", "published to"):
                table.add_column(column, overflow="fold")
            for letter_id in targets:
                try:
                    out = tempr.replay_dead_letter(letter_id, force=force)
                except TemprAPIError as exc:  # this letter refused: report it, go on with the rest
                    refused += 1
                    table.add_row(letter_id, f"[red]refused ({exc.status_code})[/red]: {exc.detail}", "")
                    continue
                again = " (again)" if out.previously_replayed_at else ""
                table.add_row(
                    letter_id, f"[green]replayed{again}[/green]", f"{out.topic}[{out.partition}]@{out.offset}"
                )
    except (TemprAPIError, httpx.HTTPError) as exc:
        raise _fail(exc, url) from exc
    _stdout().print(table)
    if refused:
        raise typer.Exit(1)


def _unreplayed_ids(tempr: TemprClient) -> list[str]:
    found: list[str] = []
    offset = 0
    while True:
        page = tempr.dead_letters(replayed=False, limit=1000, offset=offset)
        offset += len(page)
        # A record that failed on the DLQ itself is not replayable; the API would refuse it.
        found.extend(str(letter.id) for letter in page if letter.topic != DLQ.name)
        if len(page) < 1000:
            return found


def _short_time(value: datetime) -> str:
    return value.strftime("%Y-%m-%d %H:%M:%S")


def register(app: typer.Typer) -> None:
    app.command()(replay)
    app.add_typer(dlq, name="dlq")
