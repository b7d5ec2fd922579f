"""Input bounds: one rule set for the API's models, the producer helper and Kafka-fed events."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic import ValidationError

from tempr.errors import InvalidEvent
from tempr.producer import TemprProducer
from tempr.schemas.api import RetainItem, RetainRequest
from tempr.schemas.banks import Disposition
from tempr.schemas.events import MessageEvent, decode_event
from tempr.schemas.ids import stable_id
from tempr.schemas.recall import RecallRequest
from tempr.settings import Settings, get_settings

NOW = datetime(2024, 5, 1, tzinfo=UTC)


def nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {"leaf": 1}
    for _ in range(depth - 1):
        value = {"a": value}
    return value


HOSTILE: list[tuple[str, dict[str, Any]]] = [
    ("content", {"content": "a\x00b"}),
    ("content", {"content": "x\ud800y"}),
    ("content", {"content": "😀" * 60_000}),  # 240 KB of UTF-8 in 60k characters
    ("speaker", {"content": "hi", "speaker": "\x00"}),
    ("conversation_id", {"content": "hi", "conversation_id": "c\ud800"}),
    ("timestamp", {"content": "hi", "timestamp": "0001-01-01T00:00:00Z"}),
    ("timestamp", {"content": "hi", "timestamp": "9999-12-31T23:59:59Z"}),
    ("metadata", {"content": "hi", "metadata": {"blob": "x" * 1_100_000}}),
    ("metadata", {"content": "hi", "metadata": nested(200)}),
    ("metadata", {"content": "hi", "metadata": {"n": float("nan")}}),
    ("metadata", {"content": "hi", "metadata": {"k\x00": 1}}),
    ("tags", {"content": "hi", "tags": ["t"] * 65}),
    ("tags", {"content": "hi", "tags": ["t" * 129]}),
]


@pytest.mark.parametrize(("field", "item"), HOSTILE)
def test_api_item_refuses_naming_the_field(field: str, item: dict[str, Any]) -> None:
    with pytest.raises(ValidationError) as err:
        RetainItem.model_validate(item)
    assert err.value.errors()[0]["loc"][0] == field


@pytest.mark.parametrize(("field", "item"), HOSTILE)
def test_kafka_fed_event_refuses_the_same(field: str, item: dict[str, Any]) -> None:
    raw = {
        "event_type": "message",
        "event_id": str(stable_id("b", "m")),
        "bank_id": "b",
        "message_id": "m",
        "received_at": NOW.isoformat(),
        **item,
    }
    # What a producer writing straight to the topic could send: JSON with escapes and NaN.
    with pytest.raises(InvalidEvent, match=rf"{field}|Invalid JSON"):
        decode_event(json.dumps(raw, ensure_ascii=True))


async def test_producer_refuses_before_sending() -> None:
    """R2: what the API refuses never reaches the topic from the producer helper either."""
    producer = TemprProducer("127.0.0.1:1")  # never started: the refusal comes first
    with pytest.raises(ValidationError, match="content"):
        MessageEvent(
            event_id=stable_id("b", "m"),
            bank_id="b",
            message_id="m",
            content="x" * 1_200_000,
            received_at=NOW,
        )
    with pytest.raises(ValidationError, match="metadata"):
        await producer.send("b", [{"content": "hi", "metadata": {"blob": "x" * 1_100_000}}])
    with pytest.raises(ValidationError, match="timestamp"):
        await producer.send("b", [{"content": "hi", "timestamp": "9999-12-31T23:59:59Z"}])


def test_good_values_at_the_limits_pass() -> None:
    limits = get_settings()
    item = RetainItem(
        content="é" * (limits.max_content_bytes // 2),
        timestamp=limits.min_timestamp,
        metadata=nested(limits.max_metadata_depth),
        tags=["t"] * limits.max_tags,
    )
    assert item.metadata
    RetainRequest(items=[{"content": "x"}] * limits.max_items)
    with pytest.raises(ValidationError, match="TEMPR_MAX_ITEMS"):
        RetainRequest(items=[{"content": "x"}] * (limits.max_items + 1))


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf")])
def test_numbers_are_finite(value: float) -> None:
    with pytest.raises(ValidationError, match="max_tokens"):
        RecallRequest(query="q", max_tokens=value)  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="bias_strength"):
        Disposition(bias_strength=value)
    with pytest.raises(ValidationError, match="query_timestamp"):
        RecallRequest(query="q", query_timestamp="0001-01-01T00:00:00Z")  # type: ignore[arg-type]


def test_limits_are_settings_that_must_fit_the_broker() -> None:
    assert Settings(max_content_bytes=100_000).max_content_bytes == 100_000
    with pytest.raises(ValidationError, match="TEMPR_MAX_MESSAGE_BYTES"):
        Settings(max_content_bytes=2_000_000)
