"""Provenance diversity: a fact that only repeats sources already shown goes to the back.

Several facts can come from the same turns (a turn's own fact, the fact of the exchange it
belongs to, a near-paraphrase from another chunk). Shown one after another they spend the
top of the ranking, and the token budget, on one piece of evidence. This is a stable
partition: facts that bring at least one new source keep their order; fully covered ones
follow, in their order, and are still packed if room remains.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

__all__ = ["demote_covered"]

T = TypeVar("T")


def demote_covered(items: Sequence[T], sources_of: Callable[[T], Sequence[str]]) -> tuple[list[T], int]:
    """Returns the reordered items and how many were demoted. Facts without sources (opinions
    formed from nothing, for instance) are never demoted."""
    seen: set[str] = set()
    fresh: list[T] = []
    covered: list[T] = []
    for item in items:
        sources = set(sources_of(item))
        if sources and sources <= seen:
            covered.append(item)
            continue
        seen |= sources
        fresh.append(item)
    return fresh + covered, len(covered)
