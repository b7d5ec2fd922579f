"""Text processing is linear: no regex or scan in extraction is quadratic on any input.

Each call gets an adversarial 1 MB string and a loose deadline (a quadratic path takes
minutes to hours at this size, a linear one seconds even on a loaded machine). Calls run in
a child process, so a regression fails at the deadline instead of hanging the suite.
"""

from __future__ import annotations

import multiprocessing
import time
from collections.abc import Callable
from datetime import UTC, datetime

import pytest

from tempr import dates
from tempr.agents.extraction import entities, sentences, substance

MB = 1_000_000
DEADLINE_S = 30.0
_REF = datetime(2023, 5, 8, tzinfo=UTC)

INPUTS: dict[str, Callable[[], str]] = {
    # R4 of issue 15: 16k emoji took 6.4 s in the sentence regex, 200k an estimated 17 min.
    "emoji": lambda: "\U0001f600" * (MB // 4),
    "one-letter sentences": lambda: "a. " * (MB // 3),
    "a long word then a dot": lambda: "a" * (MB - 4) + "-. X",
    "punctuation run": lambda: "!" * MB,
    "ellipses": lambda: "\u2026" * MB,
    "capitalized words": lambda: "Aaaa " * (MB // 5),
    "dense dates": lambda: "Jan 3, 2020 and 4 days ago on Monday since the May 2021. " * (MB // 58),
    "month names": lambda: "in may " * (MB // 7),
}

FUNCTIONS: dict[str, Callable[[str], object]] = {
    "split_sentences": sentences.split_sentences,
    "find_time_ranges": lambda text: dates.find_time_ranges(text, _REF),
    "heuristic_entities": lambda text: entities._heuristic_entities(
        text, entities.tokens_from_text(text), ["Caroline"], []
    ),
    "content_words": substance.content_words,
}

CASES = [("split_sentences", name) for name in INPUTS] + [
    ("find_time_ranges", "dense dates"),
    ("find_time_ranges", "month names"),
    ("find_time_ranges", "emoji"),
    ("heuristic_entities", "one-letter sentences"),
    ("heuristic_entities", "capitalized words"),
    ("content_words", "one-letter sentences"),
    ("content_words", "a long word then a dot"),
]


def _call(function: str, text_name: str) -> None:
    FUNCTIONS[function](INPUTS[text_name]())


@pytest.mark.parametrize(("function", "text_name"), CASES)
def test_one_megabyte_of_adversarial_text_takes_seconds(function: str, text_name: str) -> None:
    child = multiprocessing.get_context("fork").Process(target=_call, args=(function, text_name))
    started = time.monotonic()
    child.start()
    child.join(DEADLINE_S)
    elapsed = time.monotonic() - started
    if child.is_alive():
        child.kill()
        child.join()
        pytest.fail(f"{function} on 1 MB of {text_name!r} still running after {DEADLINE_S:.0f}s")
    assert child.exitcode == 0, f"{function} failed on {text_name!r}"
    assert elapsed < DEADLINE_S


def test_sentence_boundaries_are_unchanged_by_the_linear_rules() -> None:
    text = (
        "Hi!!! there. Mr. Smith went... Then \U0001f600 Great \U0001f600\U0001f600 Yes. "
        'J. R. R. Tolkien wrote it. It cost 3.5 dollars. "Wow!" she said.'
    )
    assert sentences.split_sentences(text) == [
        "Hi!!!",
        "there.",
        "Mr. Smith went...",
        "Then \U0001f600",
        "Great \U0001f600\U0001f600",
        "Yes.",
        "J. R. R. Tolkien wrote it.",
        "It cost 3.5 dollars.",
        '"Wow!"',
        "she said.",
    ]
