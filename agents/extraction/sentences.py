"""Cheap regex sentence segmentation for chat turns.

Chat text breaks the assumptions of statistical segmenters (emoji as full stops, "!!", "...",
missing capitals), and we only need boundaries good enough to split very long turns and to
scope heuristics, so a handful of explicit rules beats loading a parser here.
"""

from __future__ import annotations

import re

__all__ = ["sentence_spans", "split_sentences"]

# Lower-cased tokens (without the final dot) after which a dot does not end a sentence.
_ABBREVIATIONS = frozenset(
    {
        "mr",
        "mrs",
        "ms",
        "dr",
        "prof",
        "sr",
        "jr",
        "st",
        "mt",
        "ft",
        "vs",
        "etc",
        "e.g",
        "i.e",
        "eg",
        "ie",
        "approx",
        "dept",
        "est",
        "inc",
        "ltd",
        "co",
        "corp",
        "no",
        "vol",
        "fig",
        "jan",
        "feb",
        "mar",
        "apr",
        "jun",
        "jul",
        "aug",
        "sep",
        "sept",
        "oct",
        "nov",
        "dec",
        "a.m",
        "p.m",
        "u.s",
        "u.k",
        "cf",
        "al",
        "ave",
        "blvd",
        "rd",
        "gen",
        "col",
        "lt",
        "sgt",
    }
)

_EMOJI = (
    "\U0001f300-\U0001faff"  # pictographs, emoticons, transport, symbols & pictographs ext.
    "\u2600-\u27bf"  # misc symbols, dingbats
    "\U0001f000-\U0001f2ff"  # mahjong, cards, enclosed alphanumerics
    "\ufe0f\u200d"  # variation selector, zero-width joiner (parts of emoji sequences)
)

# A run of terminal punctuation (including the unicode ellipsis), optional closing quotes or
# brackets, optional emoji; OR a run of emoji on its own. Then whitespace.
# Linear time on any input: a match starts only at the start of a run (the lookbehinds) and
# its runs never give back what they took (possessive quantifiers). Without both, a long run
# not followed by whitespace is rescanned from each of its characters: quadratic, and 200k
# emoji froze the worker for minutes.
_BOUNDARY = re.compile(
    rf"(?:(?<![.!?\u2026])[.!?\u2026]++[\"'\u201d\u2019)\]]*+[{_EMOJI}]*+"
    rf"|(?<![{_EMOJI}])[{_EMOJI}]++)(?=\s)"
)
# The word before a dot is read this far back at most (each look stays bounded).
_WORD_WINDOW = 100
_NEXT_CHAR = re.compile(r"\s*(\S)")


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """Character spans of sentences, stripped of surrounding whitespace.

    Spans (not strings) are the primary output because callers rewrite text in place and need
    to map sentence boundaries back onto the original offsets.
    """
    spans: list[tuple[int, int]] = []
    start = 0
    for block_start, block_end in _blocks(text):
        start = block_start
        for match in _BOUNDARY.finditer(text, block_start, block_end):
            if _is_boundary(text, match, block_end):
                _append(spans, text, start, match.end())
                start = match.end()
        _append(spans, text, start, block_end)
    return spans


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text`` in order; empty input gives an empty list."""
    return [text[s:e] for s, e in sentence_spans(text)]


def _blocks(text: str) -> list[tuple[int, int]]:
    """Line breaks always end a sentence in chat, whatever the punctuation says."""
    blocks: list[tuple[int, int]] = []
    pos = 0
    for match in re.finditer(r"\n+", text):
        blocks.append((pos, match.start()))
        pos = match.end()
    blocks.append((pos, len(text)))
    return blocks


def _append(spans: list[tuple[int, int]], text: str, start: int, end: int) -> None:
    piece = text[start:end]
    stripped = piece.strip()
    if not stripped:
        return
    lead = len(piece) - len(piece.lstrip())
    spans.append((start + lead, start + lead + len(stripped)))


def _is_boundary(text: str, match: re.Match[str], limit: int) -> bool:
    punct = match.group(0)
    nxt = _NEXT_CHAR.match(text, match.end(), limit)
    if nxt is None:
        return False  # end of block: the block end closes the sentence anyway
    following = nxt.group(1)
    if punct.startswith((".", "\u2026")) and punct.rstrip("\"'\u201d\u2019)]").endswith(("...", "\u2026")):
        # An ellipsis is a pause unless the next word clearly starts a new sentence.
        return following.isupper() or not following.isalnum()
    if punct[0] == ".":
        return _dot_ends_sentence(text, match.start(), following)
    if punct[0] in "!?":
        return True
    # Emoji-only terminator: only when the next word looks like a sentence start.
    return following.isupper() or following in "\"'"


def _dot_ends_sentence(text: str, dot: int, following: str) -> bool:
    start = dot
    while start > 0 and dot - start < _WORD_WINDOW and (text[start - 1].isalnum() or text[start - 1] in "._"):
        start -= 1
    word = text[start:dot]
    if word.lower().rstrip(".") in _ABBREVIATIONS:
        return False
    if len(word) == 1 and word.isupper():
        return False  # an initial, as in "J. R. R. Tolkien"
    if following.isdigit() and word.isdigit():
        return False  # decimal numbers are already excluded by the \s lookahead; be safe
    return not following.islower()
