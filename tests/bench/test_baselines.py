"""The BM25 and dense baseline rankers, on tiny hand-made corpora."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

import numpy as np

from bench.locomo_retrieval import (
    BM25Ranker,
    DenseRanker,
    Question,
    Sample,
    Turn,
    run_baseline,
    tokenize,
)

CORPUS = [
    "Ann: I went hiking in the mountains last weekend.",
    "Bob: My sister adopted a puppy named Rex.",
    "Ann: The weather was lovely.",
    "Bob: Rex the puppy chewed my shoes.",
]


def test_tokenize_lowercases_splits_and_drops_stop_words() -> None:
    assert tokenize("What did Ann DO with the puppy's toy, in 2023?") == ["ann", "puppy", "s", "toy", "2023"]
    assert tokenize("the and of") == []


def test_bm25_ranks_matching_turns_first_and_rarer_terms_higher() -> None:
    ranker = BM25Ranker(CORPUS)
    order = ranker.rank("hiking in the mountains")
    assert order[0] == 0
    assert sorted(order) == [0, 1, 2, 3]
    # "Rex" appears in two turns, "shoes" in one: the turn with both wins.
    assert ranker.rank("Rex shoes")[0] == 3


def test_bm25_with_only_stop_words_keeps_corpus_order() -> None:
    assert BM25Ranker(CORPUS).rank("what was the") == [0, 1, 2, 3]


VOCABULARY = ["hiking", "mountains", "puppy", "rex", "weather", "shoes"]


def bag_of_words(texts: Sequence[str]) -> np.ndarray:
    """A stand-in encoder: counts of a fixed vocabulary (not normalized on purpose)."""
    return np.array([[tokenize(t).count(w) for w in VOCABULARY] for t in texts], dtype=np.float32) + 1e-3


def test_dense_ranks_by_cosine_similarity() -> None:
    ranker = DenseRanker(CORPUS, bag_of_words)
    assert ranker.rank("weather")[0] == 2
    order = ranker.rank("puppy rex")
    assert set(order[:2]) == {1, 3}
    assert sorted(order) == [0, 1, 2, 3]


def test_run_baseline_scores_each_turn_as_its_own_dia_id() -> None:
    turns = [Turn(f"D1:{i + 1}", text) for i, text in enumerate(CORPUS)]
    sample = Sample("conv-x", [], turns, [], datetime(2023, 1, 1, tzinfo=UTC))
    questions = [
        Question("conv-x", "Who chewed the shoes?", "4", ("D1:4",)),
        Question("conv-x", "Which puppy, and where did Ann go hiking?", "1", ("D1:1", "D1:2")),
    ]
    outcomes = run_baseline(BM25Ranker(CORPUS), sample, questions)
    assert outcomes[0].recall_at["recall@5"] == 1.0
    assert outcomes[1].recall_at["recall@20"] == 1.0
    assert outcomes[1].recall_at["recall@budget"] == 1.0
    assert all(o.latency_ms >= 0 for o in outcomes)
