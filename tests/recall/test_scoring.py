from __future__ import annotations

import itertools
import math
from datetime import UTC, datetime, timedelta, timezone

import pytest

from tempr.recall_api.recall.config import RecallConfig
from tempr.recall_api.recall.scoring import (
    boost,
    final_score,
    proof_signal,
    recency_signal,
    sigmoid,
    sigmoid_normalize,
    synthetic_scores,
    temporal_proximity_signal,
)

NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)


# --- reranker normalization ------------------------------------------------------------


def test_calibrated_scores_pass_through() -> None:
    scores = [0.0, 0.25, 0.93, 1.0]
    assert sigmoid_normalize(scores) == scores


def test_logits_are_sigmoided() -> None:
    out = sigmoid_normalize([-3.0, 0.0, 4.5])
    assert out == pytest.approx([1 / (1 + math.exp(3)), 0.5, 1 / (1 + math.exp(-4.5))])
    assert all(0.0 <= s <= 1.0 for s in out)


def test_mixed_batch_is_sigmoided_as_a_whole_and_keeps_order() -> None:
    raw = [1.2, 0.9, -0.4]
    out = sigmoid_normalize(raw)
    assert out == pytest.approx([sigmoid(x) for x in raw])
    assert out == sorted(out, reverse=True)


def test_sigmoid_is_stable_at_extremes() -> None:
    assert sigmoid(1000.0) == 1.0
    assert sigmoid(-1000.0) == 0.0
    assert sigmoid(float("inf")) == 1.0
    assert sigmoid(float("-inf")) == 0.0
    assert sigmoid(float("nan")) == 0.0


def test_normalize_empty() -> None:
    assert sigmoid_normalize([]) == []


# --- synthetic scores ------------------------------------------------------------------


def test_synthetic_spread_is_linear_from_one_to_point_one() -> None:
    out = synthetic_scores(10)
    assert out[0] == 1.0
    assert out[-1] == pytest.approx(0.1)
    steps = [a - b for a, b in itertools.pairwise(out)]
    assert steps == pytest.approx([0.1] * 9)


def test_synthetic_small_cases() -> None:
    assert synthetic_scores(0) == []
    assert synthetic_scores(1) == [1.0]
    assert synthetic_scores(2) == pytest.approx([1.0, 0.1])


def test_synthetic_rejects_negative() -> None:
    with pytest.raises(ValueError):
        synthetic_scores(-1)


# --- recency ---------------------------------------------------------------------------


def recency(when: datetime | None, now: datetime) -> float:
    cfg = RecallConfig()  # a year's horizon down to a 0.1 floor
    return recency_signal(when, now, horizon_days=cfg.recency_horizon_days, floor=cfg.recency_floor)


def test_recency_horizon_and_floor_come_from_the_config() -> None:
    month_ago = NOW - timedelta(days=30)
    assert recency_signal(month_ago, NOW, horizon_days=60.0, floor=0.0) == pytest.approx(0.5)
    assert recency_signal(NOW - timedelta(days=90), NOW, horizon_days=60.0, floor=0.3) == pytest.approx(0.3)


def test_recency_now_is_one() -> None:
    assert recency(NOW, NOW) == 1.0


def test_recency_six_months_is_about_neutral() -> None:
    assert recency(NOW - timedelta(days=182.5), NOW) == pytest.approx(0.5)
    assert recency(NOW - timedelta(days=183), NOW) == pytest.approx(0.5, abs=0.01)


@pytest.mark.parametrize("days", [365, 400, 3650])
def test_recency_older_than_a_year_hits_the_floor(days: int) -> None:
    assert recency(NOW - timedelta(days=days), NOW) == pytest.approx(0.1)


def test_recency_floor_reached_before_a_year() -> None:
    assert recency(NOW - timedelta(days=340), NOW) == pytest.approx(0.1)


def test_recency_future_and_undated() -> None:
    assert recency(NOW + timedelta(days=30), NOW) == 1.0
    assert recency(None, NOW) == 0.5


def test_recency_mixes_naive_and_aware_as_utc() -> None:
    naive = datetime(2025, 6, 1, 12, 0) - timedelta(days=73)
    assert recency(naive, NOW) == pytest.approx(0.8)
    other_tz = (NOW - timedelta(days=73)).astimezone(timezone(timedelta(hours=-7)))
    assert recency(other_tz, NOW) == pytest.approx(0.8)


# --- temporal proximity ----------------------------------------------------------------

START = datetime(2023, 1, 1, tzinfo=UTC)
END = datetime(2023, 1, 11, tzinfo=UTC)  # 10-day window, centre Jan 6


def test_temporal_centre_edge_and_between() -> None:
    assert temporal_proximity_signal(datetime(2023, 1, 6, tzinfo=UTC), START, END) == 1.0
    assert temporal_proximity_signal(START, START, END) == 0.0
    assert temporal_proximity_signal(END, START, END) == 0.0
    assert temporal_proximity_signal(datetime(2023, 1, 8, 12, tzinfo=UTC), START, END) == pytest.approx(0.5)


def test_temporal_outside_window_is_zero() -> None:
    assert temporal_proximity_signal(datetime(2024, 1, 1, tzinfo=UTC), START, END) == 0.0


def test_temporal_neutral_without_date_or_window() -> None:
    assert temporal_proximity_signal(None, START, END) == 0.5
    assert temporal_proximity_signal(START, None, END) == 0.5
    assert temporal_proximity_signal(START, START, None) == 0.5
    assert temporal_proximity_signal(START, None, None) == 0.5


def test_temporal_zero_length_window_is_guarded() -> None:
    point = datetime(2023, 3, 3, 12, tzinfo=UTC)
    assert temporal_proximity_signal(point, point, point) == 1.0
    assert temporal_proximity_signal(point + timedelta(hours=6), point, point) == pytest.approx(0.5)
    assert temporal_proximity_signal(point + timedelta(days=2), point, point) == 0.0


def test_temporal_reversed_window_is_swapped() -> None:
    when = datetime(2023, 1, 8, 12, tzinfo=UTC)
    assert temporal_proximity_signal(when, END, START) == temporal_proximity_signal(when, START, END)


# --- proof count -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("count", "expected"),
    [(1, 0.5), (3, 0.61), (10, 0.73), (150, 1.0), (10_000, 1.0)],
)
def test_proof_signal_table(count: int, expected: float) -> None:
    assert proof_signal(count) == pytest.approx(expected, abs=0.005)


@pytest.mark.parametrize("count", [0, -4, None])
def test_proof_signal_below_one_is_one_proof(count: int | None) -> None:
    assert proof_signal(count) == 0.5


# --- boosts and final score ------------------------------------------------------------


@pytest.mark.parametrize(
    ("signal", "alpha", "expected"),
    [
        (1.0, 0.2, 1.10),
        (0.0, 0.2, 0.90),
        (0.5, 0.2, 1.00),
        (1.0, 0.1, 1.05),
        (0.0, 0.1, 0.95),
        (0.1, 0.2, 0.92),
    ],
)
def test_boost_extremes(signal: float, alpha: float, expected: float) -> None:
    assert boost(signal, alpha) == pytest.approx(expected)


def test_proof_boost_points() -> None:
    assert boost(proof_signal(3), 0.1) == pytest.approx(1.011, abs=0.0005)
    assert boost(proof_signal(10), 0.1) == pytest.approx(1.023, abs=0.0005)


def test_final_score_neutral_signals_keep_base() -> None:
    assert final_score(0.42, 0.5, 0.5, 0.5, RecallConfig()) == pytest.approx(0.42)


def test_final_score_combined_range() -> None:
    cfg = RecallConfig()
    best = final_score(1.0, 1.0, 1.0, 1.0, cfg)
    worst = final_score(1.0, 0.0, 0.0, 0.0, cfg)
    assert best == pytest.approx(1.1 * 1.1 * 1.05)
    assert worst == pytest.approx(0.9 * 0.9 * 0.95)
    assert best == pytest.approx(1.27, abs=0.005)
    assert worst == pytest.approx(0.77, abs=0.005)


def test_final_score_respects_config_alphas() -> None:
    flat = RecallConfig(recency_alpha=0.0, temporal_alpha=0.0, proof_alpha=0.0)
    assert final_score(0.6, 1.0, 0.0, 1.0, flat) == pytest.approx(0.6)


def test_boosts_cannot_overturn_a_large_relevance_gap() -> None:
    cfg = RecallConfig()
    assert final_score(0.9, 0.0, 0.0, 0.0, cfg) > final_score(0.5, 1.0, 1.0, 1.0, cfg)
