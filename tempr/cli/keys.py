"""`tempr keys create|list|revoke`: API keys, straight on the database (like `createuser`),
so the first key needs no key. The database is $TEMPR_DATABASE_URL, or the embedded one in
`--data-dir` (started for the command if `tempr up` is not running)."""

from __future__ import annotations

import asyncio
import getpass
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer
from rich.console import Console
from rich.table import Table

from tempr.cli.services import require_server
from tempr.errors import TemprError

if TYPE_CHECKING:  # the lean (client-only) install has neither
    import asyncpg

    from tempr.settings import Settings

__all__ = ["register"]

T = TypeVar("T")
errors = Console(stderr=True)
keys_app = typer.Typer(
    help="API keys: create (the secret is printed once), list, revoke.", no_args_is_help=True
)

DataDirOption = Annotated[
    Path | None,
    typer.Option(help="Data directory of the embedded database (ignored with TEMPR_DATABASE_URL)."),
]


def _settings(data_dir: Path | None) -> Settings:
    require_server("keys")
    from tempr.settings import Settings

    return Settings() if data_dir is None else Settings(data_dir=data_dir)


@asynccontextmanager
async def _database(settings: Settings) -> AsyncIterator[asyncpg.Connection]:
    """A connection with the schema current; the embedded Postgres is stopped again only if
    this command started it."""
    from tempr.store.migrate import apply_migrations
    from tempr.store.pool import connect
    from tempr.streams.embedded import EmbeddedPostgres

    embedded = None
    dsn = settings.database_url
    if dsn is None:
        if not settings.pg_dir.exists():
            raise TemprError(
                f"no database in {settings.data_dir}: run `tempr up` once, or set TEMPR_DATABASE_URL"
            )
        running = (settings.pg_dir / "postmaster.pid").exists()
        embedded = EmbeddedPostgres(settings.pg_dir)
        dsn = await asyncio.to_thread(embedded.start)
        if running:
            embedded = None  # tempr up owns it
    try:
        await apply_migrations(dsn)
        conn = await connect(dsn)
        try:
            yield conn
        finally:
            await conn.close()
    finally:
        if embedded is not None:
            await asyncio.to_thread(embedded.stop)


def _run(data_dir: Path | None, work: Callable[[asyncpg.Connection, Settings], Awaitable[T]]) -> T:
    settings = _settings(data_dir)

    async def main() -> T:
        async with _database(settings) as conn:
            return await work(conn, settings)

    try:
        return asyncio.run(main())
    except TemprError as exc:
        errors.print(f"[red]{exc}[/red]")
        raise typer.Exit(2) from None


def _actor() -> str:
    try:
        return f"cli:{getpass.getuser()}"
    except (KeyError, OSError):
        return "cli"


@keys_app.command()
def create(
    name: Annotated[str, typer.Option(help="Who holds the key (one live key per name).")],
    scopes: Annotated[str, typer.Option(help="Comma-separated: read, write, admin.")] = "read",
    banks: Annotated[
        str, typer.Option(help="Comma-separated bank ids, prefixes like 'user-123-*', or '*'.")
    ] = "",
    expires: Annotated[
        datetime | None,
        typer.Option(
            help="Expiry, ISO 8601 (UTC if no offset).",
            formats=["%Y-%m-%dT%H:%M:%S%z", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d"],
        ),
    ] = None,
    rate_limit: Annotated[
        float | None, typer.Option(help="Retain and recall calls a minute for this key (0: none).")
    ] = None,
    data_dir: DataDirOption = None,
) -> None:
    """Create a key; prints the key alone on stdout, once: `KEY=$(tempr keys create ...)`."""
    from tempr.keyring import create_key, load_pepper
    from tempr.store.audit import record_audit

    expires_at = None if expires is None else (expires if expires.tzinfo else expires.replace(tzinfo=UTC))

    async def work(conn: asyncpg.Connection, settings: Settings) -> str:
        async with conn.transaction():
            row, whole = await create_key(
                conn,
                load_pepper(settings),
                name=name,
                scopes=[s for s in scopes.split(",") if s.strip()],
                banks=[b for b in banks.split(",") if b.strip()],
                created_by=_actor(),
                expires_at=expires_at,
                rate_limit_per_min=rate_limit,
            )
            detail = {"key": row["id"], "name": row["name"], "scopes": row["scopes"], "banks": row["banks"]}
            await record_audit(
                conn, actor=_actor(), action="keys.create", bank_id=None, status=None, detail=detail
            )
        errors.print(
            f"key {row['id']} ({row['name']}): {','.join(row['scopes'])} on {','.join(row['banks'])}"
        )
        return whole

    print(_run(data_dir, work))


@keys_app.command("list")
def list_(
    all_: Annotated[bool, typer.Option("--all", help="Revoked keys too.")] = False,
    data_dir: DataDirOption = None,
) -> None:
    """Keys with their scopes, banks and state (never their secrets)."""
    from tempr.store import keys

    rows: list[Any] = _run(data_dir, lambda conn, _s: keys.list_keys(conn, include_revoked=all_))
    table = Table(show_header=True)
    for column in ("id", "name", "scopes", "banks", "expires", "state", "created"):
        table.add_column(column)
    now = datetime.now(UTC)
    for r in rows:
        state = (
            "revoked"
            if r["revoked_at"]
            else ("expired" if r["expires_at"] and r["expires_at"] <= now else "live")
        )
        table.add_row(
            r["id"],
            r["name"],
            ",".join(r["scopes"]),
            ",".join(r["banks"]),
            r["expires_at"].isoformat() if r["expires_at"] else "",
            state,
            r["created_at"].isoformat(timespec="seconds"),
        )
    Console().print(table)


@keys_app.command()
def revoke(
    key: Annotated[str, typer.Argument(help="The key's id or name.")],
    data_dir: DataDirOption = None,
) -> None:
    """Revoke a key: it stops working at once."""
    from tempr.store import keys
    from tempr.store.audit import record_audit

    async def work(conn: asyncpg.Connection, _s: Settings) -> Any:
        async with conn.transaction():
            row = await keys.revoke_key(conn, key)
            if row is None:
                raise TemprError(f"no live key with id or name {key!r}")
            detail = {"key": row["id"], "name": row["name"]}
            await record_audit(
                conn, actor=_actor(), action="keys.revoke", bank_id=None, status=None, detail=detail
            )
        return row

    row = _run(data_dir, work)
    errors.print(f"revoked {row['id']} ({row['name']})")


def register(app: typer.Typer) -> None:
    app.add_typer(keys_app, name="keys")
