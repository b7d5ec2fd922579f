"""What each broker gives, detected: the idempotent producer and the consumer group's real lag
on Apache Kafka; on Tansu neither, and everything still works through the journal."""

from __future__ import annotations

import httpx
import pytest

from tempr.producer import TemprProducer
from tempr.streams import broker_features
from tempr.streams.runtime import Supervisor
from tempr.streams.topics import ALL_TOPICS
from tests import conftest
from tests.conftest import wait_until

pytestmark = pytest.mark.integration


async def test_the_producer_is_idempotent_exactly_where_the_broker_gives_producer_ids(
    stack: Supervisor,
) -> None:
    on_kafka = conftest.BROKER == "kafka"
    features = await broker_features.detect_features(stack.settings.bootstrap)
    assert features.idempotent_producer is on_kafka
    async with TemprProducer(stack.settings.bootstrap) as producer:
        assert producer.idempotent is on_kafka
    async with TemprProducer(stack.settings.bootstrap, enable_idempotence=False) as producer:
        assert producer.idempotent is False  # what the caller says wins


def test_health_reports_the_groups_lag_beside_the_journal(api: httpx.Client, bank: str) -> None:
    items = [
        {"content": f"Lag probe number {i}: I planted {i} tulips.", "message_id": f"g{i}"} for i in range(5)
    ]
    assert api.post(f"/v1/banks/{bank}/memories", json={"items": items}).status_code == 202

    def drained() -> bool:
        details = api.get("/health").json()["details"]
        return details["consumer_lag"] == 0 and details["group_lag_total"] in (0, None)

    wait_until(drained, timeout=120, interval=0.5)
    details = api.get("/health").json()["details"]
    if conftest.BROKER == "kafka":
        assert set(details["group_lag"]) == {t.name for t in ALL_TOPICS}
        assert details["group_lag_total"] == 0
        metrics = api.get("/metrics").text
        assert 'tempr_consumer_group_lag{topic="tempr.messages.v1"} 0.0' in metrics
    else:
        assert details["group_lag"] is None  # Tansu's end offsets cannot be trusted
        assert "tempr_consumer_group_lag{" not in api.get("/metrics").text
