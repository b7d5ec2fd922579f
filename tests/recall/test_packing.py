from __future__ import annotations

from dataclasses import dataclass

import pytest

from inference.tokens import count_tokens
from recall_api.recall.packing import pack_by_tokens


@dataclass(frozen=True)
class Fact:
    text: str


def word_count(text: str) -> int:
    return len(text.split())


def words(n: int, tag: str = "w") -> Fact:
    return Fact(" ".join(f"{tag}{i}" for i in range(n)))


def pack(items: list[Fact], max_tokens: int) -> tuple[list[Fact], int]:
    return pack_by_tokens(items, lambda f: f.text, max_tokens, count=word_count)


def test_giant_fact_skipped_small_ones_kept() -> None:
    giant, small_a, small_b = words(500, "g"), words(10, "a"), words(20, "b")
    kept, used = pack([giant, small_a, small_b], 100)
    assert kept == [small_a, small_b]
    assert used == 30


def test_skip_and_continue_in_rank_order() -> None:
    a, big, b, c = words(40, "a"), words(61, "x"), words(30, "b"), words(30, "c")
    kept, used = pack([a, big, b, c], 100)
    assert kept == [a, b, c]
    assert used == 100


def test_nothing_fits_returns_top_item_alone() -> None:
    first, second = words(300, "a"), words(200, "b")
    kept, used = pack([first, second], 100)
    assert kept == [first]
    assert used == 300


@pytest.mark.parametrize("max_tokens", [0, -5])
def test_non_positive_budget_still_returns_top_item(max_tokens: int) -> None:
    first, second = words(3, "a"), words(1, "b")
    assert pack([first, second], max_tokens) == ([first], 3)


def test_exact_fit_uses_exactly_max_tokens() -> None:
    items = [words(25, str(i)) for i in range(4)]
    kept, used = pack(items, 100)
    assert kept == items
    assert used == 100


def test_stops_counting_once_budget_is_spent() -> None:
    seen: list[str] = []

    def counting(text: str) -> int:
        seen.append(text)
        return word_count(text)

    items = [words(10, "a"), words(10, "b"), words(10, "c")]
    kept, used = pack_by_tokens(items, lambda f: f.text, 20, count=counting)
    assert (kept, used) == (items[:2], 20)
    assert len(seen) == 2


def test_empty_input_is_empty() -> None:
    assert pack([], 100) == ([], 0)
    assert pack([], 0) == ([], 0)


def test_default_counter_is_cl100k() -> None:
    facts = [Fact("hello world"), Fact("hello world")]
    kept, used = pack_by_tokens(facts, lambda f: f.text, 3)
    assert kept == facts[:1]
    assert used == count_tokens("hello world") == 2


def test_works_with_plain_strings() -> None:
    kept, used = pack_by_tokens(["a b", "c"], str, 3, count=word_count)
    assert (kept, used) == (["a b", "c"], 3)
