"""Pure parts of the benchmarks: scoring, aggregation, percentiles, data loading."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bench.common import percentile, summarize
from bench.locomo_retrieval import (
    Outcome,
    Question,
    aggregate,
    evidence_recall,
    last_session_date,
    load_sample,
    parse_evidence,
    score_question,
    take_within_budget,
)


def test_evidence_recall_counts_the_union_of_sources_in_the_top_k() -> None:
    ranked = [["D1:1"], ["D1:2", "D1:3"], ["D2:1"], ["D1:1"]]
    assert evidence_recall(ranked, ["D1:3", "D2:1"], 1) == 0.0
    assert evidence_recall(ranked, ["D1:3", "D2:1"], 2) == 0.5
    assert evidence_recall(ranked, ["D1:3", "D2:1"], 3) == 1.0


def test_evidence_recall_with_fewer_results_than_k_and_without_k() -> None:
    assert evidence_recall([["a"]], ["a", "b"], 20) == 0.5
    assert evidence_recall([["a"], ["b"]], ["a", "b", "c", "d"]) == 0.5
    assert evidence_recall([], ["a"], 5) == 0.0


def test_evidence_recall_ignores_duplicate_evidence_and_needs_some() -> None:
    assert evidence_recall([["a"]], ["a", "a"], 5) == 1.0
    with pytest.raises(ValueError):
        evidence_recall([["a"]], [], 5)


def test_take_within_budget_stops_at_the_first_turn_that_does_not_fit() -> None:
    counts = [100, 3000, 1000, 10]
    assert take_within_budget([0, 1, 2, 3], counts, max_tokens=4096) == [0, 1]
    assert take_within_budget([2, 1, 0, 3], counts, max_tokens=4096) == [2, 1]
    assert take_within_budget([1, 3], counts, max_tokens=3010) == [1, 3]
    assert take_within_budget([1], counts, max_tokens=10) == []


def test_score_question_reports_every_k_and_the_budget() -> None:
    question = Question("conv", "q?", "1", ("a", "b"))
    ranked = [["x"]] * 5 + [["a"]] + [["x"]] * 10 + [["b"]]
    scores = score_question(question, ranked, [["a"], ["b"]])
    assert scores == {"recall@5": 0.0, "recall@10": 0.5, "recall@20": 1.0, "recall@budget": 1.0}


def _outcome(category: str, value: float, latency: float) -> Outcome:
    keys = ("recall@5", "recall@10", "recall@20", "recall@budget")
    return Outcome(category, dict.fromkeys(keys, value), latency)


def test_aggregate_averages_per_question_overall_and_by_category() -> None:
    result = aggregate([_outcome("1", 1.0, 10), _outcome("1", 0.0, 20), _outcome("4", 0.5, 30)])
    overall = result["overall"]
    assert overall["recall@10"] == pytest.approx(0.5)
    assert overall["n"] == 3
    assert overall["latency_ms_p50"] == 20
    assert result["by_category"]["1"]["recall@5"] == 0.5
    assert result["by_category"]["4"]["recall@budget"] == 0.5
    assert set(result["by_category"]) == {"1", "2", "3", "4"}
    empty = result["by_category"]["2"]
    assert empty["n"] == 0 and math.isnan(empty["recall@10"])
    assert set(empty) == set(overall)


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


def test_parse_evidence_splits_joined_ids_and_drops_unknown_ones() -> None:
    known = {"D8:6", "D9:17", "D1:1"}
    assert parse_evidence(["D8:6; D9:17"], known) == (["D8:6", "D9:17"], [])
    assert parse_evidence(["D1:1", "D", "D:11:26", "D1:1"], known) == (["D1:1"], ["D", "D:11:26"])
    assert parse_evidence([], known) == ([], [])


def _locomo(tmp_path: Path) -> Path:
    data = {
        "speaker_a": "Ann",
        "speaker_b": "Bob",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a cat."},
            {"speaker": "Bob", "dia_id": "D1:2", "text": "Nice!", "blip_caption": "a photo of a cat"},
        ],
        "session_2_date_time": "9:00 am on 20 June, 2023",
        "session_2": [{"speaker": "Ann", "dia_id": "D2:1", "text": "The cat is called Tom."}],
        "session_3_date_time": "9:00 am on 1 July, 2023",
        "session_3": [],
        "session_1_summary": "never read",
        "qa": [
            {"question": "What pet?", "answer": "cat", "evidence": ["D1:1"], "category": 4},
            {"question": "Name?", "answer": "Tom", "evidence": ["D2:1; D1:1"], "category": 1},
            {"question": "Unanswerable?", "evidence": ["D1:1"], "category": 5},
            {"question": "No evidence?", "answer": "x", "evidence": [], "category": 3},
            {"question": "Bad evidence?", "answer": "x", "evidence": ["D"], "category": 2},
        ],
    }
    path = tmp_path / "conv-1.json"
    path.write_text(json.dumps(data))
    return path


def test_last_session_date_ignores_empty_sessions(tmp_path: Path) -> None:
    data = json.loads(_locomo(tmp_path).read_text())
    assert last_session_date(data) == datetime(2023, 6, 20, 9, 0, tzinfo=UTC)


def test_load_sample_keeps_scorable_questions_and_raw_turns(tmp_path: Path) -> None:
    sample = load_sample(_locomo(tmp_path))
    assert sample.bank == "locomo-conv-1"
    assert [t.dia_id for t in sample.turns] == ["D1:1", "D1:2", "D2:1"]
    assert sample.turns[1].text == "Bob: Nice! [shares a photo: a photo of a cat]"
    assert [(q.category, q.evidence) for q in sample.questions] == [("4", ("D1:1",)), ("1", ("D2:1", "D1:1"))]
    assert sample.skipped_questions == 2
    assert sample.dropped_evidence_ids == ["D"]
    assert sample.query_timestamp == datetime(2023, 6, 20, 9, 0, tzinfo=UTC)
