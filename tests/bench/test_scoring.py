"""The strict scores of the retrieval bench, pinned on hand-made rankings."""

from __future__ import annotations

import math

import pytest

from bench.common import percentile, summarize
from bench.locomo_data import Question
from bench.locomo_score import Outcome, Ranked, aggregate, score_ranking
from bench.scoring import (
    answer_recall,
    cited_recall,
    content_words,
    distinct_turns,
    pack,
    turn_recall,
    turns_in_rank_order,
)


def test_content_words_lowercase_alphanumeric_runs_without_the_fixed_stop_list() -> None:
    assert content_words("Where did she go? To the LGBTQ support-group, in 2023!") == {
        "go",
        "lgbtq",
        "support",
        "group",
        "2023",
    }
    assert content_words("Yes, it was not") == frozenset()


def test_answer_recall_compares_sets_of_content_words() -> None:
    # "painting" twice in the answer counts once; words found in any packed text count.
    assert answer_recall("painting, painting and pottery", ["I love pottery"]) == 0.5
    assert answer_recall("painting and pottery", ["painting", "pottery class"]) == 1.0
    assert answer_recall("Paris", []) == 0.0
    assert answer_recall(2022, ["[8 May 2022] moved in 2022"]) == 1.0
    assert answer_recall("yes", ["anything"]) is None


def test_pack_skips_what_does_not_fit_and_keeps_going() -> None:
    assert pack([100, 3000, 1000, 10], 4096) == [0, 1, 3]
    assert pack([1000, 3000, 100, 10], 4096) == [0, 1, 3]
    assert pack([5000, 10], 4096) == [1]
    assert pack([], 512) == []


def test_turn_recall_counts_each_cited_turn_as_one_of_the_k_slots() -> None:
    ranked = [("D1:1", "D1:2"), ("D1:2",), ("D1:3", "D1:4"), ("D2:1",)]
    assert turns_in_rank_order(ranked, 3) == ["D1:1", "D1:2", "D1:3"]
    # An exchange citing two turns uses two slots: D2:1 is the fifth distinct turn.
    assert turn_recall(ranked, ["D2:1"], 4) == 0.0
    assert turn_recall(ranked, ["D2:1"], 5) == 1.0
    # A fact with more new turns than slots left fills only the slots left, in its order.
    assert turn_recall(ranked, ["D1:4"], 3) == 0.0
    assert turn_recall(ranked, ["D1:3", "D1:4"], 4) == 1.0
    assert turn_recall([], ["D1:1"], 5) == 0.0


def test_cited_recall_earns_every_source_of_the_top_k() -> None:
    ranked = [("D1:1", "D1:2", "D1:3"), ("D2:1",)]
    assert cited_recall(ranked, ["D1:3"], 1) == 1.0
    assert turn_recall(ranked, ["D1:3"], 1) == 0.0  # where the strict score differs
    assert cited_recall(ranked, ["D1:3", "D9:9"]) == 0.5
    with pytest.raises(ValueError):
        cited_recall(ranked, [], 1)


def test_distinct_turns_counts_turns_cited_by_the_top_results() -> None:
    ranked = [("a", "b"), ("b",), ("c", "d", "e")] + [("f",)] * 20
    assert distinct_turns(ranked, 2) == 2
    assert distinct_turns(ranked, 10) == 6


def test_score_ranking_gives_every_metric() -> None:
    question = Question("conv", "Where does Ann paint?", "1", ("D1:5", "D2:1"), "in the garden studio")
    long, longer = "filler " * 400, "filler " * 600  # 402 and 602 tokens
    ranked = [Ranked((f"D1:{i}",), long if i == 1 else "filler") for i in range(1, 4)]
    ranked.append(Ranked(("D1:4",), longer))  # does not fit in 512 after the first: skipped
    ranked += [Ranked(("D1:5", "D1:6"), "Ann paints in her garden"), Ranked(("D2:1",), "a studio")]
    scores = score_ranking(question, ranked)
    assert scores["Rt@5"] == 0.5  # D1:5 is the fifth turn cited; D2:1 the seventh
    assert scores["Rt@10"] == 1.0
    assert scores["cited@5"] == 0.5 and scores["cited@10"] == 1.0
    assert scores["turns@10"] == 7.0
    assert scores["A@512"] == 1.0  # packing went on past the long turn: garden and studio
    assert scores["A@1024"] == 1.0
    assert scores["cited@budget"] == 1.0
    without_studio = score_ranking(question, ranked[:-1])
    assert without_studio["A@512"] == 0.5 and without_studio["Rt@20"] == 0.5


def _outcome(category: str, value: float | None, latency: float) -> Outcome:
    return Outcome(category, {"Rt@10": value, "A@512": value, "A@1024": value}, latency)


def test_aggregate_averages_per_question_overall_and_by_category_skipping_unscorable() -> None:
    result = aggregate([_outcome("1", 1.0, 10), _outcome("1", 0.0, 20), _outcome("4", None, 30)])
    overall = result["overall"]
    assert overall["Rt@10"] == pytest.approx(0.5)  # the None is not a zero
    assert overall["n"] == 3 and overall["n_answer_scored"] == 2
    assert overall["latency_ms_p50"] == 20
    assert result["by_category"]["1"]["A@1024"] == 0.5
    assert math.isnan(result["by_category"]["4"]["A@512"])
    assert set(result["by_category"]) == {"1", "2", "3", "4"}
    assert math.isnan(result["by_category"]["2"]["Rt@10"])


def test_percentile_interpolates_linearly_like_numpy() -> None:
    values = [5.0, 1.0, 3.0, 2.0, 4.0]
    assert percentile(values, 50) == 3.0
    assert percentile(values, 0) == 1.0 and percentile(values, 100) == 5.0
    assert percentile(values, 95) == pytest.approx(4.8)
    assert percentile([7.0], 95) == 7.0
    assert math.isnan(percentile([], 50))
    with pytest.raises(ValueError):
        percentile(values, 101)


def test_summarize_gives_median_p95_min_max() -> None:
    summary = summarize([float(v) for v in range(1, 101)])
    assert summary["median"] == 50.5
    assert summary["p95"] == pytest.approx(95.05)
    assert (summary["min"], summary["max"], summary["n"]) == (1.0, 100.0, 100)
