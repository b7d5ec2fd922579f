"""Dead letters: a failed record with the reason, recorded durably whatever else is down.

The letter goes to tempr.dlq.v1 (the recorder stores it in Postgres, waiting out an outage);
a letter too large for the broker is written to Postgres directly, and only when that fails
too is it sent with its payload cut. A letter is never dropped silently: when neither path
works the error propagates and the record is not acked.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

from tempr.schemas.events import DeadLetter, encode_event
from tempr.store.dead_letters import record_dead_letter

__all__ = ["DIRECT_PAYLOAD_CHARS", "dead_letter_for", "deliver_dead_letter"]

log = logging.getLogger(__name__)

# Letters with a payload above this go to Postgres directly (the broker's limit is 1 MB).
DIRECT_PAYLOAD_CHARS = 256 * 1024


def _text(value: Any) -> str:
    # Binary garbage stays readable and storable (no NUL, no invalid UTF-8).
    if isinstance(value, bytes):
        return value.decode("utf-8", "backslashreplace")
    return "" if value is None else str(value)


def dead_letter_for(
    *, stage: str, message: Any, error: str, message_event_ids: Sequence[UUID] = ()
) -> DeadLetter:
    """Build the letter from a Faust/aiokafka message (anything with topic, value, ...)."""
    key = getattr(message, "key", None)
    return DeadLetter(
        stage=stage,
        topic=str(getattr(message, "topic", "?")),
        partition=getattr(message, "partition", None),
        offset=getattr(message, "offset", None),
        key=None if key is None else _text(key),
        payload=_text(getattr(message, "value", b"")),
        error=error[:4000],
        failed_at=datetime.now(UTC),
        message_event_ids=list(message_event_ids),
    )


async def deliver_dead_letter(dlq_topic: Any, pool: Any, letter: DeadLetter) -> None:
    log.warning("dead letter from %s (%s:%s): %s", letter.stage, letter.topic, letter.offset, letter.error)
    if len(letter.payload) > DIRECT_PAYLOAD_CHARS:
        try:
            await record_dead_letter(pool, letter)
            return
        except Exception as exc:
            log.warning("could not store a large dead letter directly (%r); sending it cut", exc)
            cut = f" (payload cut to {DIRECT_PAYLOAD_CHARS} of {len(letter.payload)} characters)"
            letter = letter.model_copy(
                update={"payload": letter.payload[:DIRECT_PAYLOAD_CHARS], "error": letter.error + cut}
            )
    try:
        await (await dlq_topic.send(value=encode_event(letter)))
    except Exception as exc:
        log.warning("could not send a dead letter to the DLQ topic (%r); storing it directly", exc)
        await record_dead_letter(pool, letter)
