"""Recency dates a memory by when the bank last learned of it, not by the event alone."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tempr.recall_api.recall.arms import ArmContext
from tempr.recall_api.recall.config import RecallConfig
from tempr.recall_api.recall.fusion import Candidate
from tempr.recall_api.recall.pipeline import Scored, _apply_boosts
from tempr.recall_api.recall.scoring import last_known
from tempr.store.recall import RecallFilters

NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)


def test_last_known_is_the_latest_date() -> None:
    said = NOW - timedelta(days=1)
    assert last_known(NOW - timedelta(days=900), None, said) == said
    assert last_known(said, NOW + timedelta(days=30), NOW - timedelta(days=400)) == NOW + timedelta(days=30)
    assert last_known(None, None, None) is None


def test_last_known_reads_naive_dates_as_utc() -> None:
    assert last_known(datetime(2025, 6, 2), NOW) == datetime(2025, 6, 2, tzinfo=UTC)


def _fact(occurred: datetime | None, said: datetime) -> Scored:
    row: dict[str, Any] = {
        "occurred_start": occurred,
        "occurred_end": None,
        "mentioned_at": said,
        "fact_type": "world",
        "proof_count": 1,
    }
    item = Scored(Candidate(uuid.uuid4(), {"semantic": 1}), row)  # type: ignore[arg-type]
    item.rerank = 0.6
    return item


def _boosted(cfg: RecallConfig, *items: Scored) -> list[float]:
    ctx = ArmContext(
        bank_id="b", keyword_text="", embedding=None, filters=RecallFilters(), limit=10, cfg=cfg, bank_size=2
    )
    _apply_boosts(list(items), cfg, NOW, ctx)
    return [s.final for s in items]


def test_a_dated_fact_said_today_is_as_recent_as_an_undated_one() -> None:
    said = NOW - timedelta(minutes=5)
    moved, works = _fact(NOW - timedelta(days=3 * 365), said), _fact(None, said)  # "moved in 2022"
    dated, undated = _boosted(RecallConfig(), moved, works)
    assert dated == pytest.approx(undated)


def test_recency_still_prefers_what_was_said_later() -> None:
    older = _fact(None, NOW - timedelta(days=300))
    newer = _fact(NOW - timedelta(days=900), NOW - timedelta(days=10))
    first, second = _boosted(RecallConfig(), older, newer)
    assert second > first


def test_dating_by_the_event_alone_remains_a_choice() -> None:
    said = NOW - timedelta(minutes=5)
    dated, undated = _boosted(
        RecallConfig(recency_from="happened"), _fact(NOW - timedelta(days=3 * 365), said), _fact(None, said)
    )
    assert dated < undated
