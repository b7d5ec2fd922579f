"""Provenance diversity: a fact that only repeats sources already shown goes to the back.

Several facts can come from the same turns (a turn's own fact, the fact of the exchange it
belongs to, a near-paraphrase from another chunk). Shown one after another they spend the
top of the ranking, and the token budget, on one piece of evidence. This is a stable
partition: facts that bring at least one new source keep their order; fully covered ones
follow, in their order, and are still packed if room remains.

Covered sources alone do not make a fact a repeat: a turn is split into facts of a sentence or
two, and the sentence that answers a question often follows the one that matched it. Given
the facts' sentences, only a covered fact that also says nothing new goes to the back.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

import numpy as np
from rapidfuzz import fuzz

__all__ = ["demote_covered", "mmr_order", "quotes"]

# partial_ratio of a turn's fact inside the fact of an exchange quoting it is 100 for 98 % of
# LoCoMo's pairs; unrelated facts of the same conversation stay under 65.
_QUOTE_MIN_RATIO = 90.0

T = TypeVar("T")


def demote_covered(
    items: Sequence[T],
    sources_of: Callable[[T], Sequence[str]],
    sentences_of: Callable[[T], Sequence[str]] | None = None,
) -> tuple[list[T], int]:
    """Returns the reordered items and how many were demoted. Facts without sources (opinions
    formed from nothing, for instance) are never demoted. With ``sentences_of``, a covered fact
    is demoted only when it also says nothing new: each of its sentences is in a fact kept
    above it."""
    seen: set[str] = set()
    said: set[str] = set()
    fresh: list[T] = []
    covered: list[T] = []
    for item in items:
        sources = set(sources_of(item))
        sentences = sentences_of(item) if sentences_of is not None else ()
        if sources and sources <= seen and (sentences_of is None or said.issuperset(sentences)):
            covered.append(item)
            continue
        seen |= sources
        said.update(sentences)
        fresh.append(item)
    return fresh + covered, len(covered)


def quotes(big_text: str, small_text: str) -> bool:
    """Whether ``big_text`` carries ``small_text`` (nearly) word for word. Packing asks this
    only of a fact from strictly more sources, all of the smaller one's among them; provenance
    alone is not enough, as an LLM may write two different facts from overlapping messages."""
    # partial_ratio aligns whichever text is shorter, so the direction is checked here.
    return len(small_text) <= len(big_text) and fuzz.partial_ratio(small_text, big_text) >= _QUOTE_MIN_RATIO


def mmr_order(relevance: Sequence[float], vectors: np.ndarray, weight: float) -> list[int]:
    """Maximal marginal relevance: indices in the order that trades relevance (min-max
    normalized) against similarity to what was already picked; `weight` 1 = relevance only."""
    n = len(relevance)
    if n == 0:
        return []
    rel = np.asarray(relevance, dtype=np.float64)
    span = rel.max() - rel.min()
    rel = (rel - rel.min()) / span if span > 0 else np.ones(n)
    unit = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    sims = unit @ unit.T
    picked: list[int] = [int(np.argmax(rel))]
    closest = sims[picked[0]].copy()
    available = np.ones(n, dtype=bool)
    available[picked[0]] = False
    while available.any():
        gain = np.where(available, weight * rel - (1 - weight) * closest, -np.inf)
        best = int(np.argmax(gain))  # ties: the better-ranked one (lower index)
        picked.append(best)
        available[best] = False
        closest = np.maximum(closest, sims[best])
    return picked
