"""One Apache Kafka broker (with its ZooKeeper) for the whole session, started on first use."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.brokers.apache_kafka import ApacheKafka


@pytest.fixture(scope="session")
def kafka_bootstrap(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with ApacheKafka(tmp_path_factory.mktemp("apache-kafka")) as bootstrap:
        yield bootstrap
