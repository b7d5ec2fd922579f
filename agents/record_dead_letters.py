"""Dead-letter keeper: tempr.dlq.v1 → the dead_letters table (the broker may forget)."""

from __future__ import annotations

import logging
from typing import Any

from tempr.errors import InvalidEvent
from tempr.schemas.events import DeadLetter, decode_event
from tempr.store.dead_letters import record_dead_letter
from tempr.streams.dead_letters import dead_letter_for

__all__ = ["register"]

log = logging.getLogger(__name__)


def register(app: Any, topics: Any, ctx: Any) -> None:
    @app.agent(topics.dlq, name="record_dead_letters")
    async def record_dead_letters(stream: Any) -> None:
        await ctx.wait_ready()
        async for event in stream.events():
            try:
                letter = decode_event(event.value)
                if not isinstance(letter, DeadLetter):
                    raise InvalidEvent(f"unexpected {letter.event_type} event on the DLQ")
            except InvalidEvent as exc:
                # Something foreign on the DLQ is itself kept as a letter, never re-sent.
                letter = dead_letter_for(stage="record_dead_letters", message=event.message, error=str(exc))
            try:
                await record_dead_letter(ctx.db, letter)
            except Exception:
                log.exception("could not store a dead letter")
