"""The scale bench runs each variant first equally often: the second recall of a question reads
pages the first just read, so a fixed order gave every cold read to the first variant."""

from __future__ import annotations

from collections import Counter

from bench.scale import turn_order


def test_each_variant_runs_first_equally_often_and_every_question_runs_all() -> None:
    names = ["default", "rerank-300", "no-passage"]
    orders = [turn_order(names, i) for i in range(60)]
    assert all(sorted(order) == sorted(names) for order in orders)
    assert Counter(order[0] for order in orders) == {name: 20 for name in names}
    assert Counter(order[-1] for order in orders) == {name: 20 for name in names}


def test_two_variants_swap_places_question_by_question() -> None:
    assert [turn_order(["a", "b"], i) for i in range(4)] == [["a", "b"], ["b", "a"], ["a", "b"], ["b", "a"]]


def test_one_variant_keeps_its_place() -> None:
    assert [turn_order(["only"], i) for i in range(3)] == [["only"]] * 3
