"""The A@N accounting of bench.answer_misses, on hand-made rankings."""

from __future__ import annotations

from collections import Counter

from bench.answer_misses import PLACES, QuestionOutcome, dated, judge, place_missing_words, summarize


def test_a_result_is_dated_by_when_it_was_said_and_an_undated_one_stays_as_it_is() -> None:
    said = {"text": "Caroline gave a talk at a school last week.", "mentioned_at": "2023-06-09T19:55:00Z"}
    assert dated(said) == "[9 June 2023] Caroline gave a talk at a school last week."
    assert dated({"text": "No date.", "mentioned_at": None}) == "No date."


def test_missing_words_are_placed_below_the_cut_or_beyond_and_checked_against_the_baseline() -> None:
    placed = place_missing_words(
        "The week before 9 June 2023",
        packed=["Caroline spoke at a school in June"],
        deeper=["Caroline spoke at a school in June", "it was 2023"],
        other=["[9 June 2023] Caroline: I gave a talk last week"],
    )
    # "june" is packed; "2023" is deeper in tempr's own results; "week", "before" and "9" are
    # not in them at all, and of those only "week" and "9" are in the baseline's turn.
    assert placed == Counter({(PLACES[0], True): 1, (PLACES[1], True): 2, (PLACES[1], False): 1})


def test_judge_packs_both_rankings_by_the_same_rule_and_scores_the_dated_rendering() -> None:
    results = [
        {"text": "Caroline felt powerful giving her talk.", "mentioned_at": "2023-06-09T19:55:02Z"},
        {"text": "Melanie painted a lake.", "mentioned_at": "2023-05-08T13:56:00Z"},
    ]
    hybrid = ["[9 June 2023] Caroline: I gave a talk at a school last week " + "word " * 40]
    outcome = judge("9 June 2023", "2", results, hybrid, budget=20)
    assert outcome is not None
    assert outcome.tempr == 0.0  # no date word in the plain texts
    assert outcome.hybrid == 0.0  # its one turn does not fit in 20 tokens: nothing packed
    assert outcome.tempr_dated == 1.0
    assert judge("the", "2", results, hybrid, budget=20) is None  # no content word: not scored


def test_summary_counts_wins_and_losses_per_category_and_overall() -> None:
    outcomes = [
        QuestionOutcome("1", 1.0, 0.5, 1.0, Counter()),
        QuestionOutcome("1", 0.0, 0.5, 0.5, Counter({(PLACES[1], True): 2})),
        QuestionOutcome("2", 0.5, 0.5, 1.0, Counter({(PLACES[0], False): 1})),
    ]
    summary = summarize(outcomes)
    assert summary["multi-hop"]["tempr_higher"] == 1 and summary["multi-hop"]["hybrid_higher"] == 1
    assert summary["overall"]["questions"] == 3
    assert summary["overall"]["tempr_dated"] == (1.0 + 0.5 + 1.0) / 3
    words = summary["overall"]["missing_words"]
    assert words["not in 4,096 tokens, in hybrid's"] == 2
    assert words["below the cut, not in hybrid's"] == 1
