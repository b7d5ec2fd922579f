"""`tempr up`: one command, one data directory, every part of the system.

The supervisor owns its children: the embedded Postgres and broker (unless external ones
are configured), then a Faust worker and the API as subprocesses that die with it. It
restarts a child that crashes, and on SIGINT/SIGTERM stops them in reverse order.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import httpx
from pydantic import SecretStr

from tempr.keyring import bootstrap_admin_key, check_exposure, load_pepper
from tempr.settings import Settings
from tempr.store.migrate import apply_migrations
from tempr.store.pool import create_pool
from tempr.streams.admin import ensure_topics
from tempr.streams.apache_kafka import KAFKA_VERSION, ApacheKafka
from tempr.streams.control import control_key
from tempr.streams.embedded import EmbeddedBroker, EmbeddedPostgres, die_with_parent
from tempr.streams.kafka_security import kafka_client_options
from tempr.streams.publisher import Publisher, start_producer
from tempr.streams.runtime_state import RuntimeState

__all__ = ["Supervisor", "child_env"]

log = logging.getLogger(__name__)


def child_env(settings: Settings) -> dict[str, str]:
    """The children read exactly the supervisor's settings (CLI options included), with the
    embedded services' addresses filled in."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TEMPR_")}
    for name, value in settings.model_dump().items():
        if value is None:
            continue
        if isinstance(value, SecretStr):
            value = value.get_secret_value()
        env[f"TEMPR_{name.upper()}"] = str(value)
    env["TEMPR_KAFKA_BOOTSTRAP"] = settings.bootstrap
    return env


# Exits of one child before the API first answers that make start-up give up.
_START_RESTARTS = 3
# A traceback's last line ("tempr.store.embedding_column.EmbeddingDimensionMismatch: ..."),
# not a log line ("INFO: ...").
_RAISED = re.compile(r"^(?:[A-Za-z_]\w*\.)*[A-Z]\w*: \S")
_LEVELS = ("DEBUG:", "INFO:", "WARNING:", "ERROR:", "CRITICAL:")


@dataclass
class _Child:
    name: str
    argv: list[str]
    proc: subprocess.Popen[bytes] | None = None
    restarts: int = 0
    started_at: float = 0.0


@dataclass
class Supervisor:
    settings: Settings
    say: Callable[[str], None] = print
    postgres: EmbeddedPostgres | None = None
    broker: EmbeddedBroker | ApacheKafka | None = None
    children: list[_Child] = field(default_factory=list)
    bootstrap_key: str | None = None  # set on the first start with keys: shown once
    state: RuntimeState = field(default_factory=RuntimeState)
    _stopping: bool = False
    _postgres_retry_at: float = 0.0

    def start_services(self) -> Settings:
        """Start Postgres and the broker (embedded or not), migrate, create topics."""
        s = self.settings
        check_exposure(s)
        s.data_dir.mkdir(parents=True, exist_ok=True)
        self.state.save(s.data_dir)  # restarts are counted per run of `tempr up`
        control_key(s)  # created once, before the API and the worker both want it
        if s.embedded_database:
            self.say(f"starting PostgreSQL + pgvector in {s.pg_dir}")
            self.postgres = EmbeddedPostgres(s.pg_dir)
            s = s.model_copy(update={"database_url": self.postgres.start()})
        if s.embedded_broker and s.broker == "kafka":
            # Must run on the main thread: the JVMs die with the thread that started them.
            self.say(f"starting Apache Kafka {KAFKA_VERSION} (with ZooKeeper) in {s.data_dir / 'kafka'}")
            self.broker = ApacheKafka(
                s.data_dir / "kafka", port=s.broker_port, cache=s.kafka_dist_dir, say=self.say
            )
            s = s.model_copy(update={"kafka_bootstrap": self.broker.start()})
        elif s.embedded_broker:
            self.say(f"starting the Kafka-protocol broker (Tansu) on 127.0.0.1:{s.broker_port}")
            self.broker = EmbeddedBroker(s.broker_port, log_path=s.data_dir / "broker.log")
            s = s.model_copy(update={"kafka_bootstrap": self.broker.start()})
        self.settings = s
        assert s.database_url
        applied = asyncio.run(self._prepare(s))
        self.say(f"schema ready ({', '.join(applied) or 'up to date'}); topics ready")
        return s

    async def _prepare(self, s: Settings) -> list[str]:
        assert s.database_url
        applied = await apply_migrations(s.database_url)
        await ensure_topics(s.bootstrap, s.topic_partitions, **kafka_client_options(s))
        # Tansu starts with an empty log: everything accepted but not yet materialized is
        # published again. Kafka (embedded or external) kept its log, so only entries that
        # were never published or are overdue go out.
        # Whatever the journal holds, start: an entry that cannot be published is parked,
        # and a failure here leaves the rest to the worker's sweeper.
        pool = await create_pool(s.database_url, max_size=2)
        if s.auth_required:
            self.bootstrap_key = await bootstrap_admin_key(pool, load_pepper(s))
        producer = await start_producer(s.bootstrap, **kafka_client_options(s))
        try:
            older = 0.0 if isinstance(self.broker, EmbeddedBroker) else s.redeliver_after_s
            # A restart is no entry's fault: these publishes neither count nor park.
            count = await Publisher(pool, producer).redeliver(older_than_s=older)
            if count:
                self.say(f"re-published {count} accepted messages not yet materialized")
        except Exception as exc:
            self.say(f"re-publishing the journal failed ({exc!r}); the sweeper will try again")
        finally:
            await producer.stop()
            await pool.close()
        return applied

    def start_children(self) -> None:
        python = sys.executable
        count = self.settings.stream_worker_count()
        # The first keeps the plain name (its log stays worker.log); the others share its group.
        workers = [
            _Child("worker" if i == 1 else f"worker-{i}", [python, "-m", "tempr.cli", "worker"])
            for i in range(1, count + 1)
        ]
        self.children = [*workers, _Child("api", [python, "-m", "tempr.cli", "api"])]
        for child in self.children:
            self._spawn(child)

    def _spawn(self, child: _Child) -> None:
        log_file = open(self.settings.data_dir / f"{child.name}.log", "ab")  # noqa: SIM115
        child.proc = subprocess.Popen(
            child.argv,
            env=child_env(self.settings) | {"TEMPR_PARENT_PID": str(os.getpid())},
            stdout=log_file,
            stderr=subprocess.STDOUT,
            preexec_fn=die_with_parent,
        )
        child.started_at = time.monotonic()

    def wait_until_healthy(self, timeout: float = 120.0) -> dict:
        url = f"http://{self.settings.host}:{self.settings.port}/health"
        deadline = time.monotonic() + timeout
        last: object = None
        restarts_before = {child.name: child.restarts for child in self.children}
        while time.monotonic() < deadline:
            self.check_children()
            self._fail_if_crash_looping(restarts_before)
            try:
                r = httpx.get(url, timeout=2)
                if r.status_code == 200:
                    return r.json()
                last = r.text
            except httpx.HTTPError as exc:
                last = exc
            time.sleep(0.3)
        raise TimeoutError(f"API not healthy at {url} after {timeout:.0f}s: {last}")

    def _fail_if_crash_looping(self, before: dict[str, int]) -> None:
        """A child that keeps dying before tempr is up will not get better by waiting (a model
        that does not fit the database, a bad setting): say why, from the end of its log."""
        for child in self.children:
            if child.restarts - before.get(child.name, 0) >= _START_RESTARTS:
                log_path = self.settings.data_dir / f"{child.name}.log"
                lines = log_path.read_text(errors="replace").strip().splitlines()
                raised = [line for line in lines if _RAISED.match(line) and not line.startswith(_LEVELS)]
                why = raised[-1] if raised else "\n".join(lines[-12:])
                raise RuntimeError(
                    f"the {child.name} exited {child.restarts} times while starting ({log_path}):\n{why}"
                )

    def check_children(self) -> None:
        """Restart a child that exited on its own (with a short backoff), and the embedded
        Postgres if it died; each restart is recorded for /health."""
        self._check_postgres()
        for child in self.children:
            if self._stopping or child.proc is None or child.proc.poll() is None:
                continue
            code = child.proc.returncode
            child.restarts += 1
            self._record_restart(child.name)
            self.say(f"{child.name} exited with {code}; restarting (#{child.restarts})")
            time.sleep(min(5.0, 0.5 * child.restarts))
            self._spawn(child)

    def _check_postgres(self) -> None:
        if self._stopping or self.postgres is None or time.monotonic() < self._postgres_retry_at:
            return
        if self.postgres.alive():
            return
        count = self._record_restart("postgres")
        self.say(f"PostgreSQL is not running; restarting it (#{count})")
        try:
            self.postgres.restart()
            self.say("PostgreSQL is back")
        except Exception as exc:  # old backends may still hold its memory: try again shortly
            self.say(f"PostgreSQL did not start yet ({exc!r}); trying again")
            self._postgres_retry_at = time.monotonic() + 2.0

    def _record_restart(self, name: str) -> int:
        count = self.state.restarted(name)
        try:
            self.state.save(self.settings.data_dir)
        except OSError as exc:
            log.warning("could not record the restart of %s: %r", name, exc)
        return count

    def run_forever(self) -> None:
        stop = {"now": False}

        def _on_signal(signum: int, _frame: object) -> None:
            stop["now"] = True

        signal.signal(signal.SIGINT, _on_signal)
        signal.signal(signal.SIGTERM, _on_signal)
        while not stop["now"]:
            self.check_children()
            time.sleep(0.5)

    def stop(self) -> None:
        """Children, then the broker, then Postgres: each is stopped even if one before it
        failed to stop, so no embedded service outlives `tempr up`."""
        self._stopping = True
        try:
            self._stop_children()
        finally:
            try:
                if self.broker is not None:
                    self.broker.stop()
            finally:
                if self.postgres is not None:
                    self.postgres.stop()

    def _stop_children(self) -> None:
        for child in reversed(self.children):
            if child.proc is not None and child.proc.poll() is None:
                child.proc.terminate()
        for child in reversed(self.children):
            if child.proc is None:
                continue
            try:
                child.proc.wait(20)
            except subprocess.TimeoutExpired:
                child.proc.kill()
                child.proc.wait()
