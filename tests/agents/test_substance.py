"""What counts as a turn with something to remember on its own."""

from __future__ import annotations

import pytest

from tempr.agents.extraction.substance import MIN_CONTENT_WORDS, carries_substance, content_words

NAMES = ["Caroline", "Melanie"]


@pytest.mark.parametrize(
    "text",
    [
        "Wow, Caroline! That's awesome!",
        "Thanks, Melanie! Glad you liked it.",
        "What inspired you to paint that? How long did it take?",
        "Yeah, totally agree. Bye!",
        "",
    ],
)
def test_reactions_and_questions_have_no_substance(text: str) -> None:
    assert not carries_substance(text, NAMES)


@pytest.mark.parametrize(
    "text",
    [
        "I just signed up for a pottery class yesterday. It's like therapy for me.",
        "Researching adoption agencies, it's been a dream to have a family. Any tips?",
        "Lost my job as a banker yesterday, so I'm starting my own dance studio.",
    ],
)
def test_statements_of_events_have_substance(text: str) -> None:
    assert carries_substance(text, NAMES)


def test_content_words_skip_questions_names_stop_words_and_filler() -> None:
    words = content_words("Wow, Melanie! Melanie's pottery class sounds great. Did you enjoy it?", NAMES)
    assert words == ["pottery", "class"]
    assert len(content_words("one two three four", ())) < MIN_CONTENT_WORDS  # numbers are stop words


def test_contractions_of_stop_words_are_not_content() -> None:
    words = content_words(
        "I'm super thankful. We've been there, didn't we? Don't worry, that's Mel's dog.", NAMES
    )
    assert words == ["super", "thankful", "worry", "mel", "dog"]
