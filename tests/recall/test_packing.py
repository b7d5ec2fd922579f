from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar

import pytest

from tempr.inference.tokens import count_tokens
from tempr.recall_api.recall.packing import pack_by_tokens

T = TypeVar("T")


@dataclass(frozen=True)
class Fact:
    text: str


def word_count(text: str) -> int:
    return len(text.split())


def words(n: int, tag: str = "w") -> Fact:
    return Fact(" ".join(f"{tag}{i}" for i in range(n)))


def items_of(packed: tuple[list[tuple[T, str]], int]) -> tuple[list[T], int]:
    """The kept items without the texts they are shown with."""
    return [item for item, _ in packed[0]], packed[1]


def pack(items: list[Fact], max_tokens: int) -> tuple[list[Fact], int]:
    return items_of(pack_by_tokens(items, lambda f: f.text, max_tokens, count=word_count))


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
    kept, used = items_of(pack_by_tokens(items, lambda f: f.text, 20, count=counting))
    assert (kept, used) == (items[:2], 20)
    assert len(seen) == 2


def test_empty_input_is_empty() -> None:
    assert pack([], 100) == ([], 0)
    assert pack([], 0) == ([], 0)


def test_default_counter_is_cl100k() -> None:
    facts = [Fact("hello world"), Fact("hello world")]
    kept, used = items_of(pack_by_tokens(facts, lambda f: f.text, 3))
    assert kept == facts[:1]
    assert used == count_tokens("hello world") == 2


def test_works_with_plain_strings() -> None:
    kept, used = items_of(pack_by_tokens(["a b", "c"], str, 3, count=word_count))
    assert (kept, used) == (["a b", "c"], 3)


@dataclass(frozen=True)
class Sourced:
    text: str
    sources: tuple[str, ...]


def pack_sourced(
    items: list[Sourced], max_tokens: int, *, sentences_once: bool = False
) -> tuple[list[tuple[Sourced, str]], int]:
    return pack_by_tokens(
        items,
        lambda f: f.text,
        max_tokens,
        count=word_count,
        sources_of=lambda f: f.sources,
        quotes=lambda big, small: small.text in big.text,
        sentences_once=sentences_once,
    )


def pack_absorbing(items: list[Sourced], max_tokens: int) -> tuple[list[Sourced], int]:
    return items_of(pack_sourced(items, max_tokens))


def test_an_exchange_takes_the_place_of_the_turn_it_quotes() -> None:
    turn = Sourced("she bought figurines", ("d1",))
    other = Sourced("they went camping", ("d7",))
    exchange = Sourced("what did you buy? she bought figurines", ("d0", "d1"))
    kept, used = pack_absorbing([turn, other, exchange], 10)
    # 6 of 10 are spent; the exchange costs 7 but frees the 3 of the turn it repeats.
    assert kept == [exchange, other]
    assert used == 10


def test_an_exchange_absorbs_both_its_turns() -> None:
    ask = Sourced("what did you buy?", ("d0",))
    answer = Sourced("she bought figurines", ("d1",))
    exchange = Sourced("what did you buy? she bought figurines", ("d0", "d1"))
    kept, used = pack_absorbing([ask, answer, exchange], 8)
    assert (kept, used) == ([exchange], 7)


def test_no_absorption_without_quoting_or_with_other_sources() -> None:
    turn = Sourced("she bought figurines", ("d1",))
    paraphrase = Sourced("figurines were her purchase that day", ("d0", "d1"))  # does not quote it
    elsewhere = Sourced("she bought figurines", ("d2", "d3"))  # quotes it, other sources
    same = Sourced("she bought figurines", ("d1",))  # same sources: not strictly more
    kept, used = pack_absorbing([turn, paraphrase, elsewhere, same], 100)
    assert kept == [turn, paraphrase, elsewhere, same]
    assert used == 3 + 6 + 3 + 3


def test_absorbing_still_respects_the_budget() -> None:
    turn = Sourced("she bought figurines", ("d1",))
    exchange = Sourced("what did you buy at the market? she bought figurines", ("d0", "d1"))
    kept, used = pack_absorbing([turn, exchange], 8)  # the exchange would need 10 - 3 = 7 more
    assert (kept, used) == ([turn], 3)


def test_an_exchange_repeating_a_shown_turn_is_packed_as_its_new_turn() -> None:
    first = Sourced("did you buy anything? she bought figurines", ("d0", "d1"))
    second = Sourced("she bought figurines and they were cheap", ("d1", "d2"))
    last_turn = Sourced("and they were cheap", ("d2",))
    kept, used = pack_absorbing([first, second, last_turn], 100)
    # `second` would show "she bought figurines" twice; its own new turn says the rest.
    assert kept == [first, last_turn]
    assert used == 7 + 4


def test_no_smaller_item_without_a_quote_or_an_exact_match() -> None:
    first = Sourced("did you buy anything? she bought figurines", ("d0", "d1"))
    second = Sourced("she bought figurines and they were cheap", ("d1", "d2"))
    unquoted = Sourced("prices were low", ("d2",))  # the exchange does not carry this text
    kept, _ = pack_absorbing([first, second, unquoted], 100)
    assert kept == [first, second, unquoted]
    wider = Sourced("and they were cheap", ("d2", "d3"))  # more than what `second` adds
    kept, _ = pack_absorbing([first, second, wider], 100)
    assert kept == [first, second, wider]


def test_the_smaller_item_must_fit_too() -> None:
    first = Sourced("did you buy anything? she bought figurines", ("d0", "d1"))
    second = Sourced("she bought figurines and they were cheap", ("d1", "d2"))
    last_turn = Sourced("and they were cheap", ("d2",))
    kept, used = pack_absorbing([first, second, last_turn], 10)  # 3 left, the turn needs 4
    assert (kept, used) == ([first], 7)


def pack_once(items: list[Sourced], max_tokens: int) -> tuple[list[tuple[Sourced, str]], int]:
    return pack_sourced(items, max_tokens, sentences_once=True)


def test_a_sentence_already_packed_is_not_packed_again() -> None:
    # Two exchanges of one turn both quote it ("She bought figurines.").
    before = Sourced("What did you buy? She bought figurines.", ("d0", "d1"))
    after = Sourced("She bought figurines. Were they expensive?", ("d1", "d2"))
    other = Sourced("They went camping in June.", ("d7",))
    shown, used = pack_once([before, after, other], 15)
    # The second exchange shows (and pays for) its new turn only, so the third fact fits.
    assert shown == [(before, before.text), (after, "Were they expensive?"), (other, other.text)]
    assert used == 7 + 3 + 5
    # Packed plainly, the repeated turn crowds the third fact out.
    kept, plain_used = pack_absorbing([before, after, other], 15)
    assert (kept, plain_used) == ([before, after], 13)


def test_a_fact_with_nothing_new_to_say_is_shown_whole() -> None:
    turn = Sourced("She bought figurines.", ("d1",))
    again = Sourced("She bought figurines.", ("d9",))  # another turn said the same
    shown, used = pack_once([turn, again], 100)
    assert shown == [(turn, turn.text), (again, again.text)]
    assert used == 6


def test_sentences_once_keeps_plain_packing_otherwise() -> None:
    items = [Sourced("a b c.", ("d1",)), Sourced("d e f g.", ("d2",)), Sourced("h i.", ("d3",))]
    shown, used = pack_once(items, 6)
    kept, plain_used = pack_absorbing(items, 6)
    assert [item for item, _ in shown] == kept and used == plain_used
    assert all(text == item.text for item, text in shown)
