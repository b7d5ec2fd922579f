"""The evidence-turn buckets of bench.evidence_misses, on hand-made rankings."""

from __future__ import annotations

from bench.evidence_misses import BUCKETS, Placement, arm_rank_band, place_turn, summarize_placements

SOURCES = {
    "a": ["D1:1"],
    "b": ["D1:2", "D1:3"],
    "c": ["D2:1"],
    "d": ["D3:1"],
    "e": ["D4:1"],
}
SESSION = {"D1:1": "s1", "D1:2": "s1", "D1:3": "s1", "D2:1": "s2", "D3:1": "s3", "D4:1": "s4"}


def test_a_turn_among_the_first_ten_distinct_turns_is_a_hit() -> None:
    results = [["D1:1"], ["D1:2", "D1:3"]]
    assert place_turn("D1:3", results, {}, SOURCES, SESSION) == Placement(BUCKETS[0])


def test_distinct_turns_decide_the_bucket_not_result_ranks() -> None:
    # Eleven distinct turns in six results: the turn cited eleventh is the first miss.
    results = [[f"X:{i}", f"X:{i + 1}"] for i in range(0, 10, 2)] + [["D2:1"]]
    placed = place_turn("D2:1", results, {"semantic": ["c"]}, SOURCES, SESSION)
    assert placed.bucket == "turns 11-20"
    assert placed.semantic == "1-10"
    assert placed.keyword == "not in its top 100"
    assert placed.session_in_top10 is False


def test_a_turn_outside_the_results_is_placed_by_the_arms_and_the_bank() -> None:
    results = [["D1:1"]]
    arms = {"semantic": ["a", "c"], "keyword": ["a"]}
    assert place_turn("D2:1", results, arms, SOURCES, SESSION).bucket == BUCKETS[4]
    assert place_turn("D3:1", results, arms, SOURCES, SESSION).bucket == BUCKETS[5]
    assert place_turn("D9:9", results, arms, SOURCES, SESSION).bucket == BUCKETS[6]


def test_the_session_test_looks_at_the_top_ten_turns_sessions() -> None:
    results = [["D1:1"]] + [[f"X:{i}"] for i in range(9)] + [["D1:2", "D1:3"]]
    assert place_turn("D1:3", results, {}, SOURCES, SESSION).session_in_top10 is True


def test_arm_rank_bands() -> None:
    assert [arm_rank_band(r) for r in (1, 10, 11, 50, 51, 100, None)] == [
        "1-10",
        "1-10",
        "11-50",
        "11-50",
        "51-100",
        "51-100",
        "not in its top 100",
    ]


def test_summary_shares_count_missed_turns_only_for_the_arms() -> None:
    placed = [
        Placement(BUCKETS[0]),
        Placement(BUCKETS[1], "1-10", "11-50", True),
        Placement(BUCKETS[4], "51-100", "not in its top 100", False),
        Placement(BUCKETS[0]),
    ]
    summary = summarize_placements(placed)
    assert summary["turns"] == 4 and summary["missed"] == 2
    assert summary["buckets"][BUCKETS[0]] == {"n": 2, "share": 0.5}
    assert summary["missed_semantic"]["1-10"] == {"n": 1, "share": 0.5}
    assert summary["missed_keyword"]["not in its top 100"]["n"] == 1
    assert summary["missed_session_in_top10"] == 0.5
