"""Whether a chat turn says something worth remembering on its own.

Reactions ("Wow, that's awesome!"), greetings and bare questions are a large share of chat
turns but rarely what a later question is about; as facts of their own they mostly add
near-empty, name-heavy texts that crowd recall. Such a turn is still remembered inside the
exchange it belongs to (see ``local.exchange_facts``), where it gives its neighbour context.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from spacy.lang.en.stop_words import STOP_WORDS

from tempr.agents.extraction.sentences import split_sentences

__all__ = ["MIN_CONTENT_WORDS", "carries_substance", "content_words"]

# Fewer content words than this in a turn's statements marks it as a reaction or a question.
MIN_CONTENT_WORDS = 5

# Words of acknowledgement and chat filler that spaCy does not count as stop words.
_FILLER = frozenset(
    {
        "wow", "yeah", "yes", "yep", "yup", "nope", "oh", "ohh", "hey", "hi", "hello", "thanks",
        "thank", "cool", "awesome", "great", "nice", "amazing", "omg", "haha", "hahaha", "lol",
        "sure", "ok", "okay", "totally", "glad", "love", "sounds", "good", "bye", "care",
        "congrats", "aww", "yay", "cheers", "welcome", "sorry", "agree", "absolutely",
        "definitely", "appreciate", "sweet", "wonderful", "fantastic",
    }
)  # fmt: skip
_WORD = re.compile(r"[a-z][a-z']+")


def content_words(text: str, names: Iterable[str] = ()) -> list[str]:
    """Words of the turn's statements (questions left out) that are not stop words, filler
    or the participants' names."""
    skip = {part.lower() for name in names for part in name.split()}
    statements = (s for s in split_sentences(text) if not s.rstrip().endswith("?"))
    words = (w.removesuffix("'s").strip("'") for s in statements for w in _WORD.findall(s.lower()))
    return [
        w for w in words if _stem_of_contraction(w) not in STOP_WORDS and w not in _FILLER and w not in skip
    ]


def _stem_of_contraction(word: str) -> str:
    """A contraction of stop words is no content either: "i'm" -> "i", "didn't" -> "did"."""
    return word.removesuffix("n't").split("'", 1)[0]


def carries_substance(text: str, names: Iterable[str] = ()) -> bool:
    return len(content_words(text, names)) >= MIN_CONTENT_WORDS
