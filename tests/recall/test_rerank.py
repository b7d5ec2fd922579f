"""The reranker plumbing without model weights: normalization, synthetic scores, formatting."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import pytest

from tempr.inference.rerank import get_reranker
from tempr.recall_api.recall.rerank import format_candidate, normalize_scores, rerank_scores


def test_calibrated_scores_pass_through() -> None:
    assert normalize_scores([0.0, 0.25, 1.0]) == [0.0, 0.25, 1.0]


def test_logits_go_through_the_sigmoid_for_the_whole_batch() -> None:
    got = normalize_scores([-2.0, 0.5, 3.0])
    assert got == pytest.approx([1 / (1 + math.exp(2.0)), 1 / (1 + math.exp(-0.5)), 1 / (1 + math.exp(-3.0))])
    assert got == sorted(got)  # order kept, 0.5 is not passed through as if calibrated


def test_extreme_logits_stay_finite() -> None:
    assert normalize_scores([-1e6, 1e6]) == [0.0, 1.0]


def test_no_model_means_no_reranker() -> None:
    assert get_reranker(None) is None
    assert get_reranker("some/cross-encoder") is get_reranker("some/cross-encoder")  # lazy: not loaded


async def test_synthetic_scores_follow_rank_over_0_1_to_1() -> None:
    scores, method = await rerank_scores(None, "q", ["a", "b", "c", "d"])
    assert method == "synthetic"
    assert scores == pytest.approx([1.0, 0.7, 0.4, 0.1])
    assert await rerank_scores(None, "q", []) == ([], "synthetic")


def test_candidate_is_prefixed_with_its_readable_date() -> None:
    when = datetime(2023, 6, 5, 14, tzinfo=UTC)
    assert format_candidate("We moved.", when) == "[June 5, 2023] We moved."
    assert format_candidate("Undated.", None) == "Undated."
