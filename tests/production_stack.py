"""The production topology of docker-compose.yml, as plain processes (no Docker here).

Apache Kafka (`tempr.streams.apache_kafka`), an external PostgreSQL (pgserver's binaries run as
a plain server on a loopback TCP port, password required), `tempr migrate` as a job, two
`tempr worker` and one `tempr api`, every one configured only by the TEMPR_* variables below.
`tests/integration/test_production_stack.py` runs it and checks that docker-compose.yml sets
the same variables and commands.

    python -m tests.production_stack DIR     # runs until Ctrl-C, prints where the API listens
"""

from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from tempr.settings import PACKAGED_EMBEDDING_MODEL
from tempr.streams.apache_kafka import ApacheKafka, cache_dir

__all__ = [
    "COMMANDS",
    "COMPOSE_ONLY_KAFKA_SASL",
    "WORKER_REPLICAS",
    "ExternalPostgres",
    "ProductionStack",
    "api_env",
    "tempr_env",
]

# docker-compose.yml's services running tempr, and their commands.
COMMANDS = {"migrate": ["tempr", "migrate"], "worker": ["tempr", "worker"], "api": ["tempr", "api"]}
WORKER_REPLICAS = 2


# Compose's Kafka client variables (SASL PLAIN as user `tempr`) that the process stack does not
# set: its Apache Kafka 2.3.0 listens in PLAINTEXT only (tests/integration/test_production_stack.py
# lists them as its documented exceptions).
COMPOSE_ONLY_KAFKA_SASL = {
    "TEMPR_KAFKA_SECURITY_PROTOCOL": "SASL_PLAINTEXT",
    "TEMPR_KAFKA_SASL_MECHANISM": "PLAIN",
    "TEMPR_KAFKA_SASL_USERNAME": "tempr",
    "TEMPR_KAFKA_SASL_PASSWORD": "",  # ${KAFKA_PASSWORD:?...}: required from .env
}


def tempr_env(
    database_url: str, bootstrap: str, models_dir: Path, *, auth_pepper: str, control_key: str
) -> dict[str, str]:
    """What every tempr service gets (compose's `x-tempr-env`, its `${...}` defaults taken; the
    secrets compose requires from `.env` passed in)."""
    return {
        "TEMPR_ENVIRONMENT": "production",
        "TEMPR_DATABASE_URL": database_url,
        "TEMPR_KAFKA_BOOTSTRAP": bootstrap,
        "TEMPR_AUTH": "keys",
        "TEMPR_AUTH_PEPPER": auth_pepper,
        "TEMPR_CONTROL_KEY": control_key,
        "TEMPR_TOPIC_PARTITIONS": "24",
        "TEMPR_EMBEDDING_MODEL": PACKAGED_EMBEDDING_MODEL,
        "TEMPR_RERANKER_MODEL": "",
        "TEMPR_LLM_BASE_URL": "",
        "TEMPR_LLM_MODEL": "",
        "TEMPR_LLM_API_KEY": "not-needed",
        "HF_HOME": str(models_dir),
    }


def api_env(host: str, port: int) -> dict[str, str]:
    """What the api service gets on top."""
    return {"TEMPR_HOST": host, "TEMPR_PORT": str(port)}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ExternalPostgres:
    """PostgreSQL 16 + pgvector from pgserver's binaries, as a server on 127.0.0.1:PORT that
    asks for a password (scram-sha-256), with a `tempr` role and database like compose's."""

    def __init__(self, pgdata: Path, *, port: int | None = None, password: str | None = None) -> None:
        self.pgdata = pgdata
        self.port = port or _free_port()
        self.password = password or secrets.token_hex(12)
        self._user: str | None = None

    @property
    def url(self) -> str:
        return f"postgresql://tempr:{self.password}@127.0.0.1:{self.port}/tempr"

    def start(self) -> str:
        import pgserver

        # pgserver makes the data directory (as its own system user when we are root) ...
        server = pgserver.get_server(self.pgdata, cleanup_mode=None)
        self._user = server.system_user
        if "tempr" not in server.psql("SELECT rolname FROM pg_roles WHERE rolname = 'tempr';"):
            server.psql(f"CREATE ROLE tempr LOGIN SUPERUSER PASSWORD '{self.password}';")
            server.psql("CREATE DATABASE tempr OWNER tempr;")
        self._pg_ctl("-m", "fast", "stop")
        server.cleanup()
        # ... and we run it as a network server: TCP on loopback with a password, no socket.
        (self.pgdata / "pg_hba.conf").write_text("host all all 127.0.0.1/32 scram-sha-256\n")
        options = f"-h 127.0.0.1 -p {self.port} -c unix_socket_directories=''"
        self._pg_ctl("-w", "-o", options, "-l", str(self.pgdata / "server.log"), "start")
        return self.url

    def stop(self, timeout: float = 60.0) -> None:
        """A fast shutdown (SIGINT to the postmaster), sent by us rather than by pg_ctl: under
        root, pg_ctl runs as pgserver's user, who may meanwhile have lost the right to walk
        into /tmp/pytest-of-root (every pytest session resets it to 0700)."""
        try:
            pid = int((self.pgdata / "postmaster.pid").read_text().split()[0])
            os.kill(pid, signal.SIGINT)
        except (OSError, ValueError, IndexError):
            return
        deadline = time.monotonic() + timeout
        while _running(pid) and time.monotonic() < deadline:
            time.sleep(0.2)

    def _pg_ctl(self, *args: str) -> None:
        from pgserver import pg_ctl
        from pgserver.utils import ensure_prefix_permissions

        if self._user is not None:
            ensure_prefix_permissions(self.pgdata)  # see stop()
        pg_ctl(list(args), pgdata=self.pgdata, user=self._user, timeout=60)


def _running(pid: int) -> bool:
    """Alive and not a zombie (PID 1 here does not reap the daemons pg_ctl leaves to it)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@dataclass
class ProductionStack:
    root: Path
    api_port: int = field(default_factory=_free_port)
    kafka: ApacheKafka | None = None
    postgres: ExternalPostgres | None = None
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    auth_pepper: str = field(default_factory=lambda: secrets.token_hex(32))
    control_key: str = field(default_factory=lambda: secrets.token_hex(32))
    api_key: str | None = None  # read and write on every bank, made with `tempr keys create`

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.api_port}"

    def start(self, timeout: float = 240.0) -> None:
        """Called from the main thread (the JVMs die with the thread that started them)."""
        self.root.mkdir(parents=True, exist_ok=True)
        try:
            self.kafka = ApacheKafka(self.root / "kafka", cache=cache_dir())
            self.kafka.start()
            self.postgres = ExternalPostgres(self.root / "postgres")
            self.postgres.start()
            env = self.env()
            migrate = self._run("migrate", env)
            if migrate.wait(timeout) != 0:
                raise RuntimeError(f"tempr migrate exited with {migrate.returncode}; see {self.root}")
            self.api_key = self._create_key(env, timeout)
            for i in range(1, WORKER_REPLICAS + 1):
                self._run("worker", env, name=f"worker-{i}")
            self._run("api", env | api_env("127.0.0.1", self.api_port))
            self._wait_healthy(timeout)
        except BaseException:
            self.stop()
            raise

    def env(self) -> dict[str, str]:
        assert self.kafka and self.postgres
        return tempr_env(
            self.postgres.url,
            self.kafka.bootstrap,
            self.root / "models",
            auth_pepper=self.auth_pepper,
            control_key=self.control_key,
        )

    def _create_key(self, env: dict[str, str], timeout: float) -> str:
        """As an operator would with compose: `tempr keys create` on the database."""
        tempr = str(Path(sys.executable).parent / "tempr")
        inherited = {k: v for k, v in os.environ.items() if not k.startswith("TEMPR_")}
        inherited["HOME"] = str(self.root / "home")
        done = subprocess.run(
            [tempr, "keys", "create", "--name", "production-test", "--scopes", "read,write", "--banks", "*"],
            env=inherited | env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if done.returncode != 0:
            raise RuntimeError(f"tempr keys create exited with {done.returncode}: {done.stderr[-2000:]}")
        return done.stdout.strip().splitlines()[-1]

    def _run(self, service: str, env: dict[str, str], *, name: str | None = None) -> subprocess.Popen[bytes]:
        name = name or service
        tempr = str(Path(sys.executable).parent / COMMANDS[service][0])
        inherited = {k: v for k, v in os.environ.items() if not k.startswith("TEMPR_")}
        inherited["HOME"] = str(self.root / "home")  # like a container: a home of its own
        with open(self.root / f"{name}.log", "ab") as log:
            proc = self.procs[name] = subprocess.Popen(
                [tempr, *COMMANDS[service][1:]],
                env=inherited | env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        return proc

    def _wait_healthy(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for name, proc in self.procs.items():
                if name != "migrate" and proc.poll() is not None:
                    raise RuntimeError(f"{name} exited with {proc.returncode}; see {self.root / name}.log")
            try:
                if httpx.get(f"{self.base_url}/health", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        raise TimeoutError(f"the API at {self.base_url} was not healthy after {timeout:.0f} s")

    def stop(self) -> None:
        for proc in reversed(self.procs.values()):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self.procs.values():
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if self.kafka is not None:
            self.kafka.stop()
        if self.postgres is not None:
            self.postgres.stop()


def main(argv: list[str]) -> int:
    stack = ProductionStack(Path(argv[0]).resolve())
    stack.start()
    print(f"API on {stack.base_url} (key: {stack.api_key}); Ctrl-C to stop", flush=True)
    # Blocked only now: children started earlier must not inherit a mask that ignores SIGTERM.
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        signal.sigwait({signal.SIGINT, signal.SIGTERM})
    finally:
        stack.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
