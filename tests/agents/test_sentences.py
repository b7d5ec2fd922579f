"""Regex sentence segmentation on chat-style text."""

from __future__ import annotations

import pytest

from tempr.agents.extraction.sentences import sentence_spans, split_sentences


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Hi!! How are you?? Fine.", ["Hi!!", "How are you??", "Fine."]),
        ("I met Mr. Smith today. He was nice.", ["I met Mr. Smith today.", "He was nice."]),
        ("Pets, e.g. dogs and cats, help. Truly.", ["Pets, e.g. dogs and cats, help.", "Truly."]),
        ("So fun 😀 See you soon 🎉", ["So fun 😀", "See you soon 🎉"]),
        ("Hmm... not sure. Maybe... Okay!", ["Hmm... not sure.", "Maybe...", "Okay!"]),
        ("It costs 3.50 dollars. Ok.", ["It costs 3.50 dollars.", "Ok."]),
        ("J. R. R. Tolkien wrote it. Great!", ["J. R. R. Tolkien wrote it.", "Great!"]),
        ('She shouted "wow!" Then left.', ['She shouted "wow!"', "Then left."]),
        ("first line\nsecond line", ["first line", "second line"]),
        ("no final punctuation", ["no final punctuation"]),
        ("lol", ["lol"]),
    ],
)
def test_split_sentences(text: str, expected: list[str]) -> None:
    assert split_sentences(text) == expected


def test_empty_and_blank_text_give_no_sentences() -> None:
    assert split_sentences("") == []
    assert split_sentences("  \n ") == []


def test_spans_point_into_the_original_text() -> None:
    text = "  Hello there!  General Kenobi.  "
    spans = sentence_spans(text)
    assert [text[s:e] for s, e in spans] == ["Hello there!", "General Kenobi."]
    assert all(0 <= s < e <= len(text) for s, e in spans)


def test_lower_case_after_a_dot_does_not_split() -> None:
    assert split_sentences("we went at 5 p.m. and stayed late.") == ["we went at 5 p.m. and stayed late."]
