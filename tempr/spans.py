"""Disjoint character spans with a logarithmic overlap test.

Extraction settles overlapping candidates (time expressions, entity runs) against spans
already taken; a linear scan of every taken span per candidate is quadratic on a long text
full of candidates.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Iterable

__all__ = ["DisjointSpans"]


class DisjointSpans:
    def __init__(self, spans: Iterable[tuple[int, int]] = ()) -> None:
        self._spans: list[tuple[int, int]] = []
        for span in spans:
            if not self.overlaps(span):
                self.add(span)

    def overlaps(self, span: tuple[int, int]) -> bool:
        """Whether ``[start, end)`` shares a character with a span already held."""
        start, end = span
        # Held spans are disjoint, so sorted by start they are sorted by end too: only the
        # last one starting before `end` can reach past `start`.
        i = bisect_left(self._spans, (end, -1)) - 1
        return i >= 0 and self._spans[i][1] > start

    def add(self, span: tuple[int, int]) -> None:
        insort(self._spans, span)
