"""Retained items become message events: one rule for the HTTP API and for direct producers.

Ids derive from the bank and the source's message id (or from the content), so a message
sent twice, by any route, is the same event and upserts the same facts.
"""

from __future__ import annotations

from datetime import datetime

from tempr.schemas.api import RetainItem
from tempr.schemas.events import MessageEvent
from tempr.schemas.ids import content_hash, stable_id

__all__ = ["to_message_event"]


def to_message_event(bank_id: str, item: RetainItem, received_at: datetime) -> MessageEvent:
    """Ids derive from the source id, or from the content: a resent item is the same event."""
    message_id = (
        item.message_id
        or "h"
        + content_hash(item.conversation_id, item.document_id, item.timestamp, item.speaker, item.content)[
            :32
        ]
    )
    return MessageEvent(
        event_id=stable_id(bank_id, "message", message_id),
        bank_id=bank_id,
        message_id=message_id,
        content=item.content,
        speaker=item.speaker,
        timestamp=item.timestamp or received_at,
        conversation_id=item.conversation_id,
        context=item.context,
        document_id=item.document_id,
        tags=item.tags,
        metadata=item.metadata,
        received_at=received_at,
    )
