"""Whether two fact texts say the same thing: the rule that lets a new fact fold into a stored one.

The embedding only proposes candidates (cosine is high for "paid 120 euros" and "paid 450
euros" alike); the texts decide. Two texts say the same thing when, after normalization, they
have the same words that carry meaning: numbers (digits or number words), dates, names,
negations and content words, in any order. Case, punctuation, stop words and spacing do not
count, so an exact or trivially re-worded repeat still merges; a changed number, date, name
or a "not" keeps both facts.
"""

from __future__ import annotations

import re
import unicodedata

from spacy.lang.en.stop_words import STOP_WORDS

__all__ = ["same_statement", "statement_key"]

_TOKEN = re.compile(r"\d+(?:[.,]\d+)*|[^\W\d_]+(?:'[^\W\d_]+)*")

_NUMBER_WORDS = {
    w: str(i)
    for i, w in enumerate(
        ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen", "twenty"]
    )
} | {"thirty": "30", "forty": "40", "fifty": "50", "sixty": "60", "seventy": "70", "eighty": "80",
     "ninety": "90", "hundred": "100", "thousand": "1000", "million": "1000000"}  # fmt: skip

_NEGATIONS = frozenset(
    {"not", "no", "never", "nothing", "none", "nobody", "nowhere", "neither", "nor", "without"}
)
# Stop words that say when: a date differing only in them is a different date.
_TIME_WORDS = frozenset(
    {"may", "march", "june", "august", "first", "last", "before", "after", "once", "twice", "again"}
)
_IGNORED = (STOP_WORDS - _NEGATIONS - _TIME_WORDS - set(_NUMBER_WORDS)) | {"s"}


def _number(token: str) -> str:
    """ "1,000" and "1000" are one number; "2.50" keeps its decimals."""
    if re.fullmatch(r"\d{1,3}(,\d{3})+", token):
        return token.replace(",", "")
    return token.replace(",", ".")


def _normalize(token: str) -> list[str]:
    if token[0].isdigit():
        return [_number(token)]
    if token.endswith("n't"):  # didn't -> did + not
        return [token[:-3], "not"]
    token = token.removesuffix("'s").removesuffix("'")
    if token in _NUMBER_WORDS:
        return [_NUMBER_WORDS[token]]
    return [token]


def statement_key(text: str) -> tuple[str, ...]:
    """The words that carry the statement, normalized and sorted: equal keys, same statement."""
    text = unicodedata.normalize("NFKC", text).lower().replace("\u2019", "'")
    words = [w for token in _TOKEN.findall(text) for w in _normalize(token)]
    return tuple(sorted(w for w in words if w and w not in _IGNORED))


def same_statement(a: str, b: str) -> bool:
    return statement_key(a) == statement_key(b)
