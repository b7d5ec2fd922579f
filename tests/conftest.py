"""Shared fixtures. Integration tests run against one real embedded stack per session:
PostgreSQL+pgvector (pgserver), the Tansu broker, a Faust worker and the API, started by the
same `Supervisor` that `tempr up` uses. `pytest --broker kafka` gives that stack an Apache
Kafka broker instead (`streams/apache_kafka.py`), the same one `kafka_bootstrap` gives
the broker tests.
"""

from __future__ import annotations

import asyncio
import socket
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import asyncpg
import httpx
import pytest

from tempr.settings import Settings
from tempr.store.pool import create_pool
from tempr.streams.apache_kafka import ApacheKafka, cache_dir
from tempr.streams.runtime import Supervisor

SHARED = Path(__file__).resolve().parents[1].parent / "shared"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# The broker chosen by `pytest --broker` (set in pytest_configure): stacks that tests start
# themselves get their own broker of that kind, never the session's (a consumer group shared
# by two stacks would split their records between them).
BROKER = "tansu"

# The broker-dependent tests: CI runs them a second time with `--broker kafka` (`-m broker`).
BROKER_MODULES = {
    "test_retain_pipeline.py",
    "test_retain_graph.py",
    "test_producer.py",
    "test_bank_replay.py",
    "test_dead_letter_replay.py",
    "test_redelivery.py",
    "test_crash_recovery.py",
    "test_broker_features.py",
    "test_two_workers.py",
    "test_commit_order.py",
    "test_production_stack.py",
}


def broker_env() -> dict[str, str]:
    """TEMPR_* variables that make a `tempr up` subprocess start the session's kind of broker."""
    if BROKER == "kafka":
        return {"TEMPR_BROKER": "kafka", "TEMPR_KAFKA_CACHE": str(cache_dir())}
    return {}


def make_settings(data_dir: Path, **overrides: object) -> Settings:
    values: dict[str, object] = {
        "data_dir": data_dir,
        "port": free_port(),
        "broker_port": free_port(),
        "topic_partitions": 4,
        "chunk_idle_s": 0.5,
        "sweep_interval_s": 2.0,
        "redeliver_after_s": 30.0,
        "api_workers": 1,  # one API process (per-process rate limits; the suite's memory and start time)
        # Tests run the maintenance step themselves where they need it. A background pass every
        # minute would drop the keyword statistics and indexes a test gives its small bank
        # between two of its reads (banks under half of bank_index_min_facts lose them).
        "index_maintenance_interval_s": 0,
    }
    if BROKER == "kafka":
        values.update(broker="kafka", kafka_cache=cache_dir())
    values.update(overrides)
    return Settings(**values)  # type: ignore[arg-type]


@contextmanager
def running_stack(settings: Settings) -> Iterator[Supervisor]:
    """The whole runtime, as `tempr up` starts it, stopped on exit."""
    supervisor = Supervisor(settings, say=lambda _m: None)
    try:
        supervisor.start_services()
        supervisor.start_children()
        supervisor.wait_until_healthy(timeout=180)
        yield supervisor
    finally:
        supervisor.stop()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--broker",
        choices=("tansu", "kafka"),
        default="tansu",
        help="the broker of the session's stack: the embedded Tansu, or Apache Kafka",
    )


def pytest_configure(config: pytest.Config) -> None:
    global BROKER
    BROKER = config.getoption("--broker")
    config.addinivalue_line("markers", "broker: depends on the broker; CI runs it on Tansu and on Kafka")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.name in BROKER_MODULES:
            item.add_marker(pytest.mark.broker)


@pytest.fixture(scope="session")
def kafka_bootstrap(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One Apache Kafka broker (and its ZooKeeper) for the session, started on first use."""
    with ApacheKafka(tmp_path_factory.mktemp("apache-kafka")) as bootstrap:
        yield bootstrap


@pytest.fixture(scope="session")
def stack(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Supervisor]:
    overrides: dict[str, object] = {}
    if request.config.getoption("--broker") == "kafka":
        overrides["kafka_bootstrap"] = request.getfixturevalue("kafka_bootstrap")
    with running_stack(make_settings(tmp_path_factory.mktemp("tempr"), **overrides)) as supervisor:
        yield supervisor


@pytest.fixture(scope="session")
def api(stack: Supervisor) -> Iterator[httpx.Client]:
    s = stack.settings
    with httpx.Client(base_url=f"http://{s.host}:{s.port}", timeout=30) as client:
        yield client


@pytest.fixture(scope="session")
async def db(stack: Supervisor) -> AsyncIterator[asyncpg.Pool]:
    assert stack.settings.database_url
    pool = await create_pool(stack.settings.database_url, max_size=4)
    yield pool
    await pool.close()


@pytest.fixture
def bank() -> str:
    return f"test-{uuid.uuid4().hex[:12]}"


def wait_until(predicate: Callable[[], bool], *, timeout: float = 60.0, interval: float = 0.2) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s")
        time.sleep(interval)


async def async_wait_until(predicate: Callable[[], object], *, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not await predicate():  # type: ignore[misc]
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s")
        await asyncio.sleep(0.2)
