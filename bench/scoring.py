"""Strict retrieval scores, pure: one packing rule, turns counted as cited, answer words.

- **cited R@k**: share of the evidence turns cited by the top-k results (a result earns every
  turn in its sources) — the figure reported before the strict ones, kept for comparison.
- **Rt@k**: walk the results in rank order and collect the turns they cite until k distinct
  turns are collected; the share of the evidence among them. A result citing two new turns
  uses two of the k slots; one citing more new turns than slots are left fills only the
  slots left, in the order it lists them.
- **A@N**: pack the result texts into N cl100k tokens (`pack`), and take the share of the
  gold answer's content words found in the packed text; words are compared as sets.
- **turns@10**: how many distinct turns the top 10 results cite.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence

__all__ = [
    "ANSWER_STOP_WORDS",
    "answer_recall",
    "cited_recall",
    "content_words",
    "content_words_of",
    "distinct_turns",
    "pack",
    "packed_texts",
    "turn_recall",
    "turns_in_rank_order",
]

_WORD = re.compile(r"[a-z0-9]+")

# Fixed here, not taken from a library, so that A@N compares across runs and systems.
_STOP_LIST = """the a an of to in and or is was were be been on at for with what when where who how did
    do does i you he she they it his her their my your that this as by from has have had not
    no yes"""
ANSWER_STOP_WORDS = frozenset(_STOP_LIST.split())


def content_words(text: str) -> frozenset[str]:
    """Lowercase ``[a-z0-9]+`` tokens of ``text`` less `ANSWER_STOP_WORDS`."""
    return frozenset(w for w in _WORD.findall(str(text).lower()) if w not in ANSWER_STOP_WORDS)


def pack(token_counts: Sequence[int], max_tokens: int) -> list[int]:
    """Indices of the ranked items packed into ``max_tokens``: in rank order, an item that
    does not fit in what is left is skipped and the walk goes on. The same rule for every
    system, tempr and baselines alike."""
    taken: list[int] = []
    used = 0
    for index, count in enumerate(token_counts):
        if used + count <= max_tokens:
            used += count
            taken.append(index)
    return taken


def answer_recall(answer: object, packed_texts: Iterable[str]) -> float | None:
    """Share of the answer's content words found in the packed texts; None when the answer
    has no content word (it cannot be scored)."""
    wanted = content_words(str(answer))
    if not wanted:
        return None
    return len(wanted & content_words_of(packed_texts)) / len(wanted)


def content_words_of(texts: Iterable[str]) -> set[str]:
    """The content words of all ``texts`` together."""
    found: set[str] = set()
    for text in texts:
        found |= content_words(text)
    return found


def turns_in_rank_order(ranked_sources: Sequence[Iterable[str]], k: int) -> list[str]:
    """The first ``k`` distinct turns cited, walking the results in rank order."""
    turns: dict[str, None] = {}
    for sources in ranked_sources:
        for turn in sources:
            if len(turns) >= k:
                return list(turns)
            turns.setdefault(turn)
    return list(turns)


def _check(evidence: Iterable[str]) -> set[str]:
    wanted = set(evidence)
    if not wanted:
        raise ValueError("a question without evidence cannot be scored")
    return wanted


def turn_recall(ranked_sources: Sequence[Iterable[str]], evidence: Iterable[str], k: int) -> float:
    """Rt@k: share of ``evidence`` among the first ``k`` distinct turns cited."""
    wanted = _check(evidence)
    return len(wanted & set(turns_in_rank_order(ranked_sources, k))) / len(wanted)


def cited_recall(
    ranked_sources: Sequence[Iterable[str]], evidence: Iterable[str], k: int | None = None
) -> float:
    """cited R@k: share of ``evidence`` covered by every source of the top-``k`` results (all
    results when k is None)."""
    wanted = _check(evidence)
    covered: set[str] = set()
    for sources in ranked_sources if k is None else ranked_sources[:k]:
        covered.update(sources)
    return len(wanted & covered) / len(wanted)


def distinct_turns(ranked_sources: Sequence[Iterable[str]], top: int = 10) -> int:
    """How many distinct turns the top ``top`` results cite."""
    return len({turn for sources in ranked_sources[:top] for turn in sources})


def packed_texts(texts: Sequence[str], max_tokens: int, count: Callable[[str], int]) -> list[str]:
    """The texts `pack` keeps within ``max_tokens`` (``count`` gives a text's tokens)."""
    return [texts[i] for i in pack([count(t) for t in texts], max_tokens)]
