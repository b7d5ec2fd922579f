"""Send a failed record to tempr.dlq.v1 with the reason; the agent then moves on."""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any

from tempr.schemas.events import DeadLetter, encode_event

__all__ = ["dead_letter_for", "send_dead_letter"]

log = logging.getLogger(__name__)


def dead_letter_for(*, stage: str, message: Any, error: str) -> DeadLetter:
    """Build the letter from a Faust/aiokafka message (anything with topic, value, ...)."""
    value = getattr(message, "value", b"")
    payload = value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
    key = getattr(message, "key", None)
    return DeadLetter(
        stage=stage,
        topic=str(getattr(message, "topic", "?")),
        partition=getattr(message, "partition", None),
        offset=getattr(message, "offset", None),
        key=key.decode("utf-8", "replace") if isinstance(key, bytes) else key,
        payload=payload,
        error=error[:4000],
        failed_at=datetime.now(UTC),
    )


async def send_dead_letter(dlq_topic: Any, *, stage: str, message: Any, error: str) -> None:
    letter = dead_letter_for(stage=stage, message=message, error=error)
    log.warning("dead letter from %s (%s:%s): %s", stage, letter.topic, letter.offset, error)
    fut = await dlq_topic.send(value=encode_event(letter))
    await fut
