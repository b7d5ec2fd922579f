"""The baseline rankers and the evidence row, on tiny hand-made corpora."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from bench.baselines import BM25Ranker, DenseRanker, HybridRanker, dated, neighbour_windows, rrf, tokenize
from bench.locomo_data import Question, Sample, Turn, last_session_date, load_sample, parse_evidence
from bench.locomo_retrieval import run_baseline, run_evidence

CORPUS = [
    "Ann: I went hiking in the mountains last weekend.",
    "Bob: My sister adopted a puppy named Rex.",
    "Ann: The weather was lovely.",
    "Bob: Rex the puppy chewed my shoes.",
]


def test_tokenize_lowercases_splits_and_drops_stop_words() -> None:
    assert tokenize("What did Ann DO with the puppy's toy, in 2023?") == ["ann", "puppy", "s", "toy", "2023"]
    assert tokenize("the and of") == []


def test_dated_turn_carries_its_session_date_as_text() -> None:
    assert dated(datetime(2023, 5, 8, 13, 56, tzinfo=UTC), "Caroline", "Hi!") == "[8 May 2023] Caroline: Hi!"
    assert dated(datetime(2023, 5, 8, tzinfo=UTC), None, "Hi!") == "[8 May 2023] Hi!"


def test_bm25_ranks_matching_turns_first_and_rarer_terms_higher() -> None:
    ranker = BM25Ranker(CORPUS)
    order = ranker.rank("hiking in the mountains")
    assert order[0] == 0
    assert sorted(order) == [0, 1, 2, 3]
    # "Rex" appears in two turns, "shoes" in one: the turn with both wins.
    assert ranker.rank("Rex shoes")[0] == 3


def test_bm25_with_only_stop_words_keeps_corpus_order() -> None:
    assert BM25Ranker(CORPUS).rank("what was the") == [0, 1, 2, 3]


VOCABULARY = ["hiking", "mountains", "puppy", "rex", "weather", "shoes", "sister"]


def bag_of_words(texts: Sequence[str]) -> np.ndarray:
    """A stand-in encoder: counts of a fixed vocabulary (not normalized on purpose)."""
    return np.array([[tokenize(t).count(w) for w in VOCABULARY] for t in texts], dtype=np.float32) + 1e-3


def test_dense_ranks_by_cosine_similarity() -> None:
    ranker = DenseRanker(CORPUS, bag_of_words)
    assert ranker.rank("weather")[0] == 2
    order = ranker.rank("puppy rex")
    assert set(order[:2]) == {1, 3}
    assert sorted(order) == [0, 1, 2, 3]


def test_neighbour_windows_stay_within_a_session() -> None:
    windows = neighbour_windows(["a", "b", "c", "d"], ["D1:1", "D1:2", "D1:3", "D2:1"])
    assert windows == ["a\nb", "a\nb\nc", "b\nc", "d"]


def test_rrf_sums_reciprocal_ranks_and_breaks_ties_by_index() -> None:
    assert rrf([[0, 1, 2], [2, 1, 0]]) == [0, 2, 1]  # 0 and 2 tie on 1/61 + 1/63 > 2/62
    assert rrf([[1, 0], [1, 0], [0, 1]]) == [1, 0]


def test_hybrid_finds_a_turn_by_its_neighbours_words() -> None:
    # "Lovely!" alone is about nothing; beside its neighbour it is about the mountains.
    texts = ["Bob: My sister has a puppy.", "Ann: We hiked the mountains.", "Bob: Lovely!", "Ann: Yes."]
    ids = ["D1:1", "D2:1", "D2:2", "D3:1"]
    assert BM25Ranker(texts).rank("mountains")[:2] == [1, 0]
    assert HybridRanker(texts, ids, bag_of_words).rank("mountains")[:2] == [1, 2]


def _sample() -> Sample:
    turns = [Turn(f"D1:{i + 1}", f"[1 January 2023] {text}") for i, text in enumerate(CORPUS)]
    return Sample("conv-x", [], turns, [], datetime(2023, 1, 1, tzinfo=UTC))


def test_run_baseline_scores_each_turn_as_its_own_dia_id() -> None:
    questions = [
        Question("conv-x", "Who chewed the shoes?", "4", ("D1:4",), "Rex"),
        Question(
            "conv-x", "Which puppy, and where did Ann go hiking?", "1", ("D1:1", "D1:2"), "Rex, mountains"
        ),
    ]
    outcomes = run_baseline(BM25Ranker([t.text for t in _sample().turns]), _sample(), questions)
    assert outcomes[0].scores["Rt@5"] == 1.0
    assert outcomes[0].scores["A@512"] == 1.0
    assert outcomes[1].scores["Rt@20"] == 1.0
    assert outcomes[1].scores["turns@10"] == 4.0
    assert all(o.latency_ms >= 0 for o in outcomes)


def test_evidence_row_holds_only_the_evidence_turns() -> None:
    question = Question("conv-x", "Who chewed what?", "4", ("D1:4",), "Rex chewed the shoes in Paris")
    [outcome] = run_evidence(_sample(), [question])
    assert outcome.scores["Rt@5"] == 1.0 and outcome.scores["turns@10"] == 1.0
    assert outcome.scores["A@4096"] == 0.75  # "paris" is in no turn: the ceiling is below 1


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
            {"question": "Year?", "answer": 2023, "evidence": ["D2:1; D1:1"], "category": 1},
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


def test_load_sample_keeps_scorable_questions_and_dated_raw_turns(tmp_path: Path) -> None:
    sample = load_sample(_locomo(tmp_path))
    assert sample.bank == "locomo-conv-1"
    assert [t.dia_id for t in sample.turns] == ["D1:1", "D1:2", "D2:1"]
    assert sample.turns[1].text == "[8 May 2023] Bob: Nice! [shares a photo: a photo of a cat]"
    assert [(q.category, q.evidence, q.answer) for q in sample.questions] == [
        ("4", ("D1:1",), "cat"),
        ("1", ("D2:1", "D1:1"), "2023"),
    ]
    assert sample.skipped_questions == 2
    assert sample.dropped_evidence_ids == ["D"]
    assert sample.query_timestamp == datetime(2023, 6, 20, 9, 0, tzinfo=UTC)
