"""Provenance diversity: facts that only repeat shown sources move behind, in order."""

from __future__ import annotations

import numpy as np

from tempr.recall_api.recall.diversity import demote_covered, mmr_order, quotes


def _run(items: list[tuple[str, list[str]]]) -> tuple[list[str], int]:
    ordered, demoted = demote_covered(items, lambda item: item[1])
    return [name for name, _ in ordered], demoted


def test_repeats_of_shown_sources_go_behind_in_their_order() -> None:
    items = [
        ("exchange", ["D1:1", "D1:2"]),
        ("turn-2", ["D1:2"]),
        ("other", ["D3:4"]),
        ("turn-1", ["D1:1"]),
        ("new-and-old", ["D1:1", "D5:5"]),
    ]
    assert _run(items) == (["exchange", "other", "new-and-old", "turn-2", "turn-1"], 2)


def test_a_fact_with_one_new_source_keeps_its_place() -> None:
    items = [("a", ["x"]), ("b", ["x", "y"]), ("c", ["y"]), ("d", ["z"])]
    assert _run(items) == (["a", "b", "d", "c"], 1)


def test_facts_without_sources_are_never_demoted() -> None:
    items = [("a", ["x"]), ("opinion", []), ("b", ["x"]), ("opinion-2", [])]
    assert _run(items) == (["a", "opinion", "opinion-2", "b"], 1)


def test_nothing_to_do() -> None:
    assert _run([]) == ([], 0)
    assert _run([("a", ["x"]), ("b", ["y"])]) == (["a", "b"], 0)


def test_mmr_keeps_the_best_first_and_spreads_near_copies() -> None:
    a = np.array([1.0, 0.0, 0.0])
    near_a = np.array([0.99, 0.05, 0.0])
    b = np.array([0.0, 1.0, 0.0])
    weak = np.array([0.0, 0.0, 1.0])
    vectors = np.stack([a, near_a, b, weak])
    relevance = [1.0, 0.9, 0.85, 0.0]
    # Relevance alone would keep the near-copy second; MMR lets the different fact through.
    assert mmr_order(relevance, vectors, 0.7) == [0, 2, 1, 3]
    assert mmr_order(relevance, vectors, 1.0) == [0, 1, 2, 3]


def test_mmr_edge_cases() -> None:
    assert mmr_order([], np.zeros((0, 3)), 0.7) == []
    assert mmr_order([0.5], np.ones((1, 3)), 0.7) == [0]
    same = np.ones((3, 3))
    assert mmr_order([0.2, 0.2, 0.2], same, 0.7) == [0, 1, 2]  # ties keep the ranked order


def test_quotes_finds_a_turn_inside_its_exchange() -> None:
    turn = "Melanie said to Caroline: Thanks! We just did it yesterday (19 October 2023)!"
    exchange = (
        "Caroline said to Melanie: Did you go to the beach? "
        "Melanie said to Caroline: Thanks! We just did it yesterday (19 October 2023)! The kids loved it."
    )
    assert quotes(exchange, turn)
    assert quotes(exchange, turn.replace("Thanks!", "Thanks so much!"))  # a small edit still quotes
    assert not quotes(exchange, "Caroline said to Melanie: I went to a pride parade last week.")
    assert not quotes(turn, exchange)


def test_a_covered_fact_that_says_something_new_keeps_its_place() -> None:
    """A turn split into sentences: the answer follows the sentence that matched, citing the
    same turn. Only a fact every sentence of which was said above goes behind."""
    items = [
        ("matched", ["D4:3"], ("This necklace is special to me.",)),
        ("answer", ["D4:3"], ("It stands for love, faith and strength.",)),
        ("other", ["D9:1"], ("I bought a bike.",)),
        ("repeat", ["D4:3"], ("This necklace is special to me.", "It stands for love, faith and strength.")),
        ("last", ["D9:2"], ("The bike is red.",)),
    ]
    ordered, demoted = demote_covered(items, lambda item: item[1], lambda item: item[2])
    assert [name for name, *_ in ordered] == ["matched", "answer", "other", "last", "repeat"]
    assert demoted == 1
    # Without the sentences, every covered fact goes behind (the rule before stop 18).
    ordered, demoted = demote_covered(items, lambda item: item[1])
    assert [name for name, *_ in ordered] == ["matched", "other", "last", "answer", "repeat"]


def test_a_sentence_counts_as_said_only_when_a_kept_fact_said_it() -> None:
    items = [
        ("a", ["x"], ("one.",)),
        ("b", ["x"], ("one.", "two.")),  # covered, says "two." first: kept in place
        ("c", ["x"], ("two.",)),  # covered, "two." said by b: behind
        ("d", ["y"], ("three.",)),
    ]
    ordered, _ = demote_covered(items, lambda item: item[1], lambda item: item[2])
    assert [name for name, *_ in ordered] == ["a", "b", "d", "c"]
