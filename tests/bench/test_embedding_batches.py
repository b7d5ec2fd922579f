"""The embedding-batches bench's plans: which texts run together, and what padding costs."""

from __future__ import annotations

from bench.embedding_batches import padding_ratio, passes


def test_groups_stay_apart_and_are_sorted_only_when_asked() -> None:
    lengths = [30, 10, 20, 40, 5]
    assert passes(lengths, group=3, per_pass=3, by_length=False) == [[0, 1, 2], [3, 4]]
    assert passes(lengths, group=3, per_pass=2, by_length=True) == [[1, 2], [0], [4, 3]]


def test_padding_counts_each_pass_at_its_longest() -> None:
    tokens = [10, 40, 10, 40]
    assert padding_ratio(tokens, [[0, 1, 2, 3]]) == 160 / 100
    assert padding_ratio(tokens, [[0, 2], [1, 3]]) == 1.0
