"""One question's strict scores from a ranking, and their means overall and by category."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from bench.common import percentile
from bench.locomo_data import CATEGORIES, Question
from bench.scoring import answer_recall, cited_recall, distinct_turns, pack, turn_recall
from tempr.inference.tokens import count_tokens

__all__ = ["A_BUDGETS", "KS", "MAX_TOKENS", "METRICS", "Outcome", "Ranked", "aggregate", "score_ranking"]

KS = (5, 10, 20)
A_BUDGETS = (512, 1024, 4096)
MAX_TOKENS = max(A_BUDGETS)
METRICS = (
    *(f"Rt@{k}" for k in KS),
    *(f"A@{n}" for n in A_BUDGETS),
    "turns@10",
    *(f"cited@{k}" for k in KS),
    "cited@budget",
)


@dataclass(frozen=True)
class Ranked:
    """One result of a ranking: the turns it cites and the text it shows."""

    sources: tuple[str, ...]
    text: str


@dataclass(frozen=True)
class Outcome:
    """The scores of one system on one question (an A@N is None when the answer has no
    content word)."""

    category: str
    scores: Mapping[str, float | None]
    latency_ms: float


def score_ranking(question: Question, ranked: Sequence[Ranked]) -> dict[str, float | None]:
    sources = [r.sources for r in ranked]
    counts = [count_tokens(r.text) for r in ranked]
    scores: dict[str, float | None] = {f"Rt@{k}": turn_recall(sources, question.evidence, k) for k in KS}
    for budget in A_BUDGETS:
        scores[f"A@{budget}"] = answer_recall(question.answer, [ranked[i].text for i in pack(counts, budget)])
    scores["turns@10"] = float(distinct_turns(sources, 10))
    scores.update({f"cited@{k}": cited_recall(sources, question.evidence, k) for k in KS})
    scores["cited@budget"] = cited_recall([sources[i] for i in pack(counts, MAX_TOKENS)], question.evidence)
    return scores


def _mean(values: Sequence[float | None]) -> float:
    kept = [v for v in values if v is not None]
    return float(np.mean(kept)) if kept else math.nan


def summarize_outcomes(outcomes: Sequence[Outcome]) -> dict[str, float]:
    """Mean of each metric (A@N over the questions it can score), latency p50/p95, n."""
    summary = {key: _mean([o.scores.get(key) for o in outcomes]) for key in METRICS}
    latencies = [o.latency_ms for o in outcomes]
    summary["latency_ms_p50"] = percentile(latencies, 50)
    summary["latency_ms_p95"] = percentile(latencies, 95)
    summary["n"] = len(outcomes)
    summary["n_answer_scored"] = sum(1 for o in outcomes if o.scores.get("A@512") is not None)
    return summary


def aggregate(outcomes: Sequence[Outcome]) -> dict[str, Any]:
    """{"overall": {...}, "by_category": {"1": {...}, ..., "4": {...}}}."""
    return {
        "overall": summarize_outcomes(outcomes),
        "by_category": {
            category: summarize_outcomes([o for o in outcomes if o.category == category])
            for category in CATEGORIES
        },
    }
