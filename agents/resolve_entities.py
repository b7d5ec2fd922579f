"""Resolver and linker: facts → graph updates (tempr.facts.v1 → tempr.graph.v1).

Keyed by bank, so one bank's facts are resolved one batch at a time by one worker.
"""

from __future__ import annotations

import logging
from typing import Any

from schemas.events import FactsEvent, GraphEvent, decode_event, encode_event
from streams.dead_letters import send_dead_letter
from streams.topics import bank_key
from tempr.errors import InvalidEvent

__all__ = ["graph_event", "register"]

log = logging.getLogger(__name__)


def graph_event(facts: FactsEvent) -> GraphEvent:
    return GraphEvent(
        bank_id=facts.bank_id,
        chunk_id=facts.chunk_id,
        chunk_text=facts.chunk_text,
        conversation_id=facts.conversation_id,
        document_id=facts.document_id,
        message_event_ids=facts.message_event_ids,
        facts=facts.facts,
    )


def register(app: Any, topics: Any, ctx: Any) -> None:
    @app.agent(topics.facts, name="resolve_entities")
    async def resolve_entities(stream: Any) -> None:
        await ctx.wait_ready()
        async for events in stream.take_events(64, within=0.2):
            for event in events:
                try:
                    decoded = decode_event(event.value)
                    if not isinstance(decoded, FactsEvent):
                        raise InvalidEvent(f"unexpected {decoded.event_type} event on the facts topic")
                    out = graph_event(decoded)
                except InvalidEvent as exc:
                    await send_dead_letter(
                        topics.dlq, stage="resolve_entities", message=event.message, error=str(exc)
                    )
                    continue
                except Exception as exc:
                    log.exception("resolution failed")
                    await send_dead_letter(
                        topics.dlq, stage="resolve_entities", message=event.message, error=repr(exc)
                    )
                    continue
                fut = await topics.graph.send(key=bank_key(out.bank_id), value=encode_event(out))
                await fut
