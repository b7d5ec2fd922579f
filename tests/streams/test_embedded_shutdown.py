"""No embedded service outlives `tempr up`: Postgres is stopped even without a handle to it,
and even when the broker before it fails to stop."""

from __future__ import annotations

from pathlib import Path

import pytest

from tempr.streams.embedded import EmbeddedBroker, EmbeddedPostgres
from tempr.streams.runtime import Supervisor
from tests.conftest import free_port, make_settings, wait_until


class _BrokerThatFailsToStop(EmbeddedBroker):
    def stop(self, timeout: float = 10.0) -> None:
        super().stop(timeout)
        raise RuntimeError("the broker did not stop cleanly")


def test_postgres_without_a_handle_is_stopped_all_the_same(tmp_path: Path) -> None:
    running = EmbeddedPostgres(tmp_path / "postgres")
    running.start()
    try:
        assert running.alive()
        # Another object on the same directory holds no handle (a restart whose start
        # raised after the server came up looks the same): its stop must still stop it.
        EmbeddedPostgres(tmp_path / "postgres").stop()
        wait_until(lambda: not running.alive(), timeout=30)
    finally:
        running.stop()  # already stopped: harmless
    assert not running.alive()


def test_supervisor_stops_postgres_when_the_broker_fails_to_stop(tmp_path: Path) -> None:
    postgres = EmbeddedPostgres(tmp_path / "postgres")
    postgres.start()
    broker = _BrokerThatFailsToStop(free_port())
    broker.start()
    supervisor = Supervisor(make_settings(tmp_path), say=lambda _m: None, postgres=postgres, broker=broker)
    try:
        with pytest.raises(RuntimeError, match="did not stop cleanly"):
            supervisor.stop()
        assert not broker.alive()
        assert not postgres.alive()
    finally:
        postgres.stop()
