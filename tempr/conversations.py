"""Files of conversations → retain items, for `tempr ingest` and the benchmarks.

Two formats are read:
- ours: a JSON list (or JSONL, one per line) of conversations
  `{"conversation_id": "...", "messages": [{"content", "speaker", "timestamp", "message_id", ...}]}`
  (a bare list of messages is one conversation);
- LoCoMo (`speaker_a`, `session_N`, `session_N_date_time`, `qa`): each session is one
  conversation, the session date becomes the time of its turns and `dia_id` the message id.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from tempr.schemas.api import RetainItem

__all__ = ["Conversation", "locomo_conversations", "parse_locomo_date", "read_conversations"]

_SESSION = re.compile(r"^session_(\d+)$")


@dataclass
class Conversation:
    conversation_id: str
    items: list[RetainItem]


def parse_locomo_date(text: str) -> datetime:
    """'1:56 pm on 8 May, 2023' → aware UTC datetime."""
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def locomo_conversations(data: dict[str, Any], *, name: str = "locomo") -> Iterator[Conversation]:
    sessions = sorted((int(m.group(1)), key) for key in data if (m := _SESSION.match(key)) and data[key])
    for number, key in sessions:
        started = parse_locomo_date(data[f"{key}_date_time"])
        items = []
        for position, turn in enumerate(data[key]):
            content = turn.get("text", "").strip()
            if turn.get("blip_caption"):
                content = f"{content} [shares a photo: {turn['blip_caption']}]".strip()
            if not content:
                continue
            items.append(
                RetainItem(
                    content=content,
                    speaker=turn.get("speaker"),
                    # Turns keep their order within the session: one second apart.
                    timestamp=started + timedelta(seconds=position),
                    conversation_id=f"{name}/session_{number}",
                    message_id=turn["dia_id"],
                )
            )
        yield Conversation(f"{name}/session_{number}", items)


def _ours(record: Any, index: int) -> Conversation:
    if isinstance(record, list):
        record = {"messages": record}
    conversation_id = record.get("conversation_id") or f"conversation-{index}"
    items = [
        RetainItem.model_validate({"conversation_id": conversation_id, **message})
        for message in record.get("messages", [])
    ]
    return Conversation(conversation_id, items)


def read_conversations(path: Path) -> list[Conversation]:
    text = path.read_text()
    if path.suffix == ".jsonl":
        records: list[Any] = [json.loads(line) for line in text.splitlines() if line.strip()]
    else:
        loaded = json.loads(text)
        records = loaded if isinstance(loaded, list) else [loaded]
    conversations: list[Conversation] = []
    for index, record in enumerate(records):
        if isinstance(record, dict) and "speaker_a" in record:
            conversations.extend(locomo_conversations(record, name=path.stem))
        elif (
            isinstance(record, list) and record and isinstance(record[0], dict) and "content" in record[0]
        ) or isinstance(record, dict):
            conversations.append(_ours(record, index))
        else:
            raise ValueError(f"{path}: record {index} is neither a conversation nor a LoCoMo sample")
    return conversations
