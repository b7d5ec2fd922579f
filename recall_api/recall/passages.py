"""Passage context: a fact amid talk about the question is likelier to answer it.

A reply such as "It was great, the kids loved it" says little by itself; the turns around it
say what "it" was. So each candidate's relevance is blended with the best relevance among the
candidates from its passage: the turns within a few positions of its own in the same
conversation (journal order, so a streamed conversation and a batch import have the same
passages). The same idea as scoring a passage with its document in passage retrieval.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TypeVar

__all__ = ["passage_relevance", "passage_relevance_of"]

T = TypeVar("T")


def passage_relevance(
    items: Sequence[T],
    relevance: Sequence[float],
    sources_of: Callable[[T], Sequence[str]],
    nearby: Mapping[str, Sequence[str]],
    weight: float,
) -> list[float]:
    """Each item's relevance blended with its passage's: ``(1 - weight) * own + weight *
    best``, where best is the highest relevance among the items citing one of its turns or a
    turn ``nearby`` lists for them (itself included, so the best of a passage keeps its
    score). An item without sources has no passage and keeps its own."""
    return passage_relevance_of(
        items,
        relevance,
        sources_of,
        [[near for turn in sources_of(item) for near in nearby.get(turn, ())] for item in items],
        weight,
    )


def passage_relevance_of(
    items: Sequence[T],
    relevance: Sequence[float],
    sources_of: Callable[[T], Sequence[str]],
    nearby: Sequence[Sequence[str] | None],
    weight: float,
) -> list[float]:
    """`passage_relevance` with each item's nearby turns given per item (``nearby[i]``: the
    turns around item i's own, None for none), as recall reads them with the items."""
    best_by_turn: dict[str, float] = {}
    for item, score in zip(items, relevance, strict=True):
        for turn in sources_of(item):
            if score > best_by_turn.get(turn, float("-inf")):
                best_by_turn[turn] = score
    out = []
    for item, own, near in zip(items, relevance, nearby, strict=True):
        best = own
        for turns in (sources_of(item), near or ()):
            for turn in turns:
                theirs = best_by_turn.get(turn)
                if theirs is not None and theirs > best:
                    best = theirs
        out.append((1.0 - weight) * own + weight * best)
    return out
