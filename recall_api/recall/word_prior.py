"""How often a word is used in general English: the keyword arm's prior on what a word tells.

BM25 knows a word is common only from the bank's own facts. In a bank of ten facts "live"
and "Kojo" each occur once and weigh the same, so "Where does Kwame live?" ranks "Kwame's
brother Kojo lives in Accra" first on "live" alone. wordfreq (its English list ships in the
wheel: no download, works offline) gives each word's frequency across general English; the
keyword SQL (store/recall.py) turns it into a per-lexeme weight and blends it with the
bank's own evidence, by the bank's size (RecallConfig.keyword_prior_facts).
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache

__all__ = ["load_word_prior", "word_frequencies", "zipf_to_frequency"]


@lru_cache(maxsize=1)
def load_word_prior() -> None:
    """Read the English list now (~1 s): the API does it at start, not on the first recall."""
    _frequency("the")


@lru_cache(maxsize=16384)
def _frequency(word: str) -> float:
    from wordfreq import word_frequency  # imported on first use: the worker never needs it

    return float(word_frequency(word, "en"))


def word_frequencies(words: Iterable[str]) -> tuple[list[str], list[float]]:
    """The distinct lowercase ``words`` and the share of general-English words each one is
    (0.0 for a word the list does not hold: a rare name, a typo)."""
    distinct = list(dict.fromkeys(w.lower() for w in words if w))
    return distinct, [_frequency(w) for w in distinct]


def zipf_to_frequency(zipf: float) -> float:
    """A Zipf value (log10 of uses per billion words) as a share of words."""
    return float(10.0 ** (zipf - 9.0))
