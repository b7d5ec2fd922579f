"""LoCoMo-format conversations for the retrieval bench: retain items, dated raw turns and the
questions of categories 1-4 with their evidence and gold answers.

Only the turns are used as input: the dataset's observations, summaries and event
annotations are never read. The held-out conversations under `bench/data/heldout` use the
same format.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from bench.baselines import dated
from bench.common import REPO
from tempr.conversations import parse_locomo_date, read_conversations

__all__ = [
    "CATEGORIES",
    "CATEGORY_NAMES",
    "DATA_DIR",
    "HELDOUT_DIR",
    "Question",
    "Sample",
    "Turn",
    "conversation_paths",
    "last_session_date",
    "load_sample",
    "parse_evidence",
]

DATA_DIR = REPO.parent / "shared" / "data" / "locomo"
HELDOUT_DIR = REPO / "bench" / "data" / "heldout"
CATEGORIES = ("1", "2", "3", "4")
CATEGORY_NAMES = {"1": "multi-hop", "2": "temporal", "3": "open-domain", "4": "single-hop"}

_SESSION_DATE = re.compile(r"^session_(\d+)_date_time$")
_EVIDENCE_SPLIT = re.compile(r"[;,\s]+")


@dataclass(frozen=True)
class Turn:
    dia_id: str
    text: str  # "[8 May 2023] Caroline: ..."


@dataclass(frozen=True)
class Question:
    conversation: str
    question: str
    category: str
    evidence: tuple[str, ...]
    answer: str = ""


@dataclass
class Sample:
    """One conversation: its retain items, dated raw turns and scorable questions."""

    stem: str
    items: list[Any]
    turns: list[Turn]
    questions: list[Question]
    query_timestamp: datetime
    skipped_questions: int = 0
    dropped_evidence_ids: list[str] = field(default_factory=list)

    @property
    def bank(self) -> str:
        return f"locomo-{self.stem}"

    def turn_texts(self) -> dict[str, str]:
        return {turn.dia_id: turn.text for turn in self.turns}


def parse_evidence(raw: Iterable[str], known: set[str]) -> tuple[list[str], list[str]]:
    """Split evidence strings ("D8:6; D9:17" holds two ids) and keep the ids that name a turn
    of the conversation; returns (kept, dropped), each without duplicates, in order."""
    kept: list[str] = []
    dropped: list[str] = []
    for entry in raw:
        for part in _EVIDENCE_SPLIT.split(str(entry)):
            if not part:
                continue
            target = kept if part in known else dropped
            if part not in target:
                target.append(part)
    return kept, dropped


def last_session_date(data: Mapping[str, Any]) -> datetime:
    numbered = [
        (int(m.group(1)), key)
        for key in data
        if (m := _SESSION_DATE.match(key)) and data.get(f"session_{m.group(1)}")
    ]
    _, key = max(numbered)
    return parse_locomo_date(data[key])


def load_sample(path: Path) -> Sample:
    data = json.loads(path.read_text())
    items = [item for conversation in read_conversations(path) for item in conversation.items]
    turns = [Turn(item.message_id, dated(item.timestamp, item.speaker, item.content)) for item in items]
    known = {turn.dia_id for turn in turns}
    sample = Sample(path.stem, items, turns, [], last_session_date(data))
    for qa in data.get("qa", []):
        category = str(qa.get("category"))
        if category not in CATEGORIES:
            continue
        kept, dropped = parse_evidence(qa.get("evidence") or [], known)
        sample.dropped_evidence_ids.extend(dropped)
        if not kept:
            sample.skipped_questions += 1
            continue
        answer = str(qa.get("answer", ""))
        sample.questions.append(Question(path.stem, str(qa["question"]), category, tuple(kept), answer))
    return sample


def conversation_paths(names: str | None, data_dir: Path = DATA_DIR) -> list[Path]:
    if not names:
        paths = sorted(data_dir.glob("*.json"))
        if not paths:
            raise SystemExit(f"no conversations in {data_dir}")
        return paths
    paths = [data_dir / f"{name.strip().removesuffix('.json')}.json" for name in names.split(",")]
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        raise SystemExit(f"no such conversation: {', '.join(missing)}")
    return paths
