"""Relevance normalization, the three secondary signals, and the combined final score."""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import UTC, datetime

from tempr.recall_api.recall.config import RecallConfig

__all__ = [
    "NEUTRAL_SIGNAL",
    "boost",
    "final_score",
    "last_known",
    "proof_signal",
    "recency_signal",
    "sigmoid",
    "sigmoid_normalize",
    "synthetic_scores",
    "synthetic_scores_from_fused",
    "temporal_proximity_signal",
]

NEUTRAL_SIGNAL = 0.5

_SECONDS_PER_DAY = 86_400.0
_SYNTHETIC_TOP = 1.0
_SYNTHETIC_BOTTOM = 0.1
# Windows shorter than a day are widened to a day: memory dates are rarely finer than that,
# and a zero-length window would otherwise divide by zero.
_MIN_HALF_WINDOW_DAYS = 0.5


def _clamp(value: float, low: float, high: float) -> float:
    return max(low, min(high, value))


def sigmoid(x: float) -> float:
    """Logistic function that neither overflows for large |x| nor returns NaN for infinities."""
    if math.isnan(x):
        return 0.0
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    z = math.exp(x)
    return z / (1.0 + z)


def sigmoid_normalize(scores: Sequence[float]) -> list[float]:
    """Map one reranker call's scores into [0, 1].

    The decision is made for the whole batch: if every score is already in [0, 1] (a
    calibrated API reranker) all pass through unchanged; if any score falls outside (raw
    logits) every score goes through the sigmoid. Deciding per score would break ordering in
    a mixed batch (a logit of 0.9 would outrank a logit of 1.2, which maps to ~0.77), so call
    this once over all candidates of a query, not per reranker mini-batch.
    """
    values = [float(s) for s in scores]
    if all(0.0 <= s <= 1.0 for s in values):
        return values
    return [sigmoid(s) for s in values]


def synthetic_scores(n: int) -> list[float]:
    """Stand-in relevance for n rank-ordered candidates when no reranker runs.

    Linear from 1.0 (first) to 0.1 (last), so the multiplicative boosts still have a
    meaningful base to act on.
    """
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    if n == 1:
        return [_SYNTHETIC_TOP]
    step = (_SYNTHETIC_TOP - _SYNTHETIC_BOTTOM) / max(n - 1, 1)
    return [_SYNTHETIC_TOP - i * step for i in range(n)]


def synthetic_scores_from_fused(fused: Sequence[float]) -> list[float]:
    """Stand-in relevance from the fused (RRF) scores of rank-ordered candidates, spread over
    [0.1, 1.0] by min-max.

    Monotone in RRF rank like `synthetic_scores`, but it keeps the gaps: with a linear spread
    over 300 candidates neighbouring ranks differ by 0.003, so the ±10 % recency boost would
    reorder the top thirty at will; consensus across arms must not be that easy to undo.
    """
    if not fused:
        return []
    top, bottom = max(fused), min(fused)
    if top - bottom <= 1e-12:
        return [_SYNTHETIC_TOP] * len(fused)
    span = _SYNTHETIC_TOP - _SYNTHETIC_BOTTOM
    return [_SYNTHETIC_BOTTOM + span * (f - bottom) / (top - bottom) for f in fused]


def _as_utc(moment: datetime) -> datetime:
    # Naive datetimes are taken to be UTC so naive and aware values can be compared.
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    return moment


def _days_between(earlier: datetime, later: datetime) -> float:
    return (_as_utc(later) - _as_utc(earlier)).total_seconds() / _SECONDS_PER_DAY


def last_known(*moments: datetime | None) -> datetime | None:
    """The latest of a memory's dates (when it happened, ended, was said): when the bank last
    learned something of it. None when it has none."""
    dated = [_as_utc(m) for m in moments if m is not None]
    return max(dated) if dated else None


def recency_signal(when: datetime | None, now: datetime, *, horizon_days: float, floor: float) -> float:
    """1.0 for a memory dated at ``now``, falling linearly to ``floor`` after ``horizon_days``
    (RecallConfig.recency_horizon_days and recency_floor).

    Undated memories are neutral; dates after ``now`` count as fully recent.
    """
    if when is None:
        return NEUTRAL_SIGNAL
    days_ago = max(_days_between(when, now), 0.0)
    return _clamp(1.0 - days_ago / horizon_days, floor, 1.0)


def temporal_proximity_signal(
    when: datetime | None,
    window_start: datetime | None,
    window_end: datetime | None,
) -> float:
    """1.0 at the centre of the query's time window, 0.0 at its edges and beyond.

    Neutral when the memory is undated or the query has no window. A reversed window is
    read as the same span with its ends swapped.
    """
    if when is None or window_start is None or window_end is None:
        return NEUTRAL_SIGNAL
    start, end = sorted((_as_utc(window_start), _as_utc(window_end)))
    center = start + (end - start) / 2
    half_window = max(_days_between(start, end) / 2, _MIN_HALF_WINDOW_DAYS)
    distance = abs(_days_between(center, when))
    return 1.0 - min(distance / half_window, 1.0)


def proof_signal(proof_count: int | None) -> float:
    """Logarithmic credit for evidence: 1 proof is neutral, ~150 saturates at 1.0.

    Counts below one (or missing) are treated as a single proof.
    """
    count = max(proof_count or 1, 1)
    return _clamp(NEUTRAL_SIGNAL + math.log(count) / 10.0, 0.0, 1.0)


def boost(signal: float, alpha: float) -> float:
    """Multiplier centred on 1.0: a signal of 0.5 is neutral, 0/1 move it by -/+ alpha/2."""
    return 1.0 + alpha * (signal - NEUTRAL_SIGNAL)


def final_score(
    base: float,
    recency: float,
    temporal: float,
    proof: float,
    cfg: RecallConfig,
) -> float:
    """Normalized relevance scaled by the recency, temporal and proof boosts (signals in)."""
    return (
        base
        * boost(recency, cfg.recency_alpha)
        * boost(temporal, cfg.temporal_alpha)
        * boost(proof, cfg.proof_alpha)
    )
