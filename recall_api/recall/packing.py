"""Greedy token-budget packing of ranked results."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Generic, TypeVar

from tempr.inference.tokens import count_tokens

__all__ = ["pack_by_tokens", "split_sentences"]

T = TypeVar("T")

# A sentence ends at . ! or ? followed by space: the unit a fact repeats another's in (the two
# exchanges of a turn both quote it, each with a different neighbour).
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


# A bank's facts come back recall after recall, and each packed one is split twice (what is
# left unsaid, then what it says): splitting was most of sentence-once packing's cost.
@lru_cache(maxsize=16_384)
def split_sentences(text: str) -> tuple[str, ...]:
    return tuple(s for s in (part.strip() for part in _SENTENCE_END.split(text)) if s)


def pack_by_tokens(
    items: Sequence[T],
    text_of: Callable[[T], str],
    max_tokens: int,
    count: Callable[[str], int] = count_tokens,
    *,
    sources_of: Callable[[T], Sequence[str]] | None = None,
    quotes: Callable[[T, T], bool] | None = None,
    sentences_once: bool = False,
) -> tuple[list[tuple[T, str]], int]:
    """Take items in rank order while their text fits in ``max_tokens``; each kept item comes
    with the text it is shown with.

    An item that does not fit in what is left is skipped and the walk goes on, so one long
    fact cannot crowd out shorter ones ranked below it. The walk stops once the budget is
    exactly spent. If nothing fits (including ``max_tokens <= 0``) the top item is returned
    alone, whatever its size, so a non-empty ranking never packs to an empty answer.

    With ``sources_of`` and ``quotes(big, small)`` the same text is never packed twice:

    - an item that quotes kept ones from strictly fewer of its own sources (the fact of an
      exchange, after the fact of one of its turns) takes the place of the first of them and
      pays only for what it adds;
    - an item that repeats sources already kept, and quotes an item of the ranking made from
      exactly its other sources, is packed as that smaller item (an exchange whose first turn
      is already shown is packed as the fact of its second turn).

    With ``sentences_once`` a sentence already packed is not packed again: a kept item is
    shown with its sentences less those a better-ranked kept item showed (and pays only for
    those). Two exchanges of one turn both quote it; the second then shows only its other
    turn, and the budget it saves goes to the next fact. An item with no sentence left is
    shown whole: it cites its own turns, which the reader may look up.

    Returns the kept items with their texts, and the tokens they use.
    """
    return _pack(items, text_of, max_tokens, count, sources_of, quotes, once=sentences_once)


def _pack(
    items: Sequence[T],
    text_of: Callable[[T], str],
    max_tokens: int,
    count: Callable[[str], int],
    sources_of: Callable[[T], Sequence[str]] | None,
    quotes: Callable[[T, T], bool] | None,
    *,
    once: bool,
) -> tuple[list[tuple[T, str]], int]:
    packer = _Packer(items, text_of, count, sources_of, quotes, once=once)
    for item in items:
        remaining = max_tokens - packer.used
        if remaining <= 0:
            break
        packer.offer(item, remaining)
    kept = packer.kept()
    if kept or not items:
        return kept, packer.used
    top = text_of(items[0])
    return [(items[0], top)], packer.top_cost if packer.top_cost is not None else count(top)


class _Packer(Generic[T]):
    def __init__(
        self,
        items: Sequence[T],
        text_of: Callable[[T], str],
        count: Callable[[str], int],
        sources_of: Callable[[T], Sequence[str]] | None,
        quotes: Callable[[T, T], bool] | None,
        *,
        once: bool = False,
    ) -> None:
        self.text_of, self.count = text_of, count
        self.once = once
        self.said: set[str] = set()  # sentences of the kept items (once)
        self.shown: dict[int, str] = {}  # id() of a kept item shown with fewer sentences
        both = sources_of is not None and quotes is not None
        self.sources_of = sources_of if both else None
        self.quotes = quotes if both else None
        self.slots: list[tuple[T, int, frozenset[str]] | None] = []  # None: absorbed later
        self.by_source: dict[str, list[int]] = defaultdict(list)  # source -> slots citing it
        self.covered: set[str] = set()
        self.taken: set[int] = set()  # id() of items packed in another's place
        self.used = 0
        self.top_cost: int | None = None
        # Each item's sources, read once; and the best-ranked item made from exactly a set.
        self.sources: dict[int, frozenset[str]] = {}
        self.by_sources: dict[frozenset[str], T] = {}
        if self.sources_of is not None:
            for item in items:
                sources = self.sources[id(item)] = frozenset(self.sources_of(item))
                self.by_sources.setdefault(sources, item)

    def kept(self) -> list[tuple[T, str]]:
        return [
            (slot[0], self.shown.get(id(slot[0])) or self.text_of(slot[0]))
            for slot in self.slots
            if slot is not None
        ]

    def _unsaid(self, text: str) -> str | None:
        """``text`` less the sentences already packed; None when nothing is cut or nothing
        would be left."""
        if not self.once or not self.said:
            return None
        sentences = split_sentences(text)
        left = [s for s in sentences if s not in self.said]
        return " ".join(left) if left and len(left) < len(sentences) else None

    def _say(self, text: str) -> None:
        if self.once:
            self.said.update(split_sentences(text))

    def offer(self, item: T, remaining: int) -> None:
        if id(item) in self.taken:  # never the first item: top_cost is still counted below
            return
        cost = self.count(self.text_of(item))
        if self.top_cost is None:
            self.top_cost = cost
        sources = self.sources.get(id(item), frozenset())
        absorbed = self._absorbed(item, sources) if len(sources) > 1 else []
        if absorbed:
            freed = sum(slot[1] for i in absorbed if (slot := self.slots[i]) is not None)
            if cost - freed <= remaining:
                self.slots[absorbed[0]] = (item, cost, sources)
                for i in absorbed[1:]:
                    self.slots[i] = None
                self._cite(absorbed[0], sources)
                self.used += cost - freed
                self._say(self.text_of(item))
            return
        smaller = self._smaller(item, sources)
        if smaller is not None:
            item, sources = smaller, sources - self.covered
            cost = self.count(self.text_of(item))
        text = self.text_of(item)
        unsaid = self._unsaid(text)
        if unsaid is not None:
            cost = self.count(unsaid)
        if cost <= remaining:
            if smaller is not None:
                self.taken.add(id(item))
            self.slots.append((item, cost, sources))
            self._cite(len(self.slots) - 1, sources)
            self.used += cost
            self._say(text)
            if unsaid is not None:
                self.shown[id(item)] = unsaid

    def _cite(self, at: int, sources: frozenset[str]) -> None:
        for source in sources:
            self.by_source[source].append(at)
        self.covered |= sources

    def _absorbed(self, item: T, sources: frozenset[str]) -> list[int]:
        """Positions of kept items that ``item`` repeats, in order."""
        assert self.quotes is not None
        found: set[int] = set()
        for source in sources:
            for i in self.by_source.get(source, ()):
                slot = self.slots[i]
                if i in found or slot is None:
                    continue
                if slot[2] and slot[2] < sources and self.quotes(item, slot[0]):
                    found.add(i)
        return sorted(found)

    def _smaller(self, item: T, sources: frozenset[str]) -> T | None:
        """The item made from exactly the sources ``item`` adds, when ``item`` quotes it."""
        new = sources - self.covered
        if not new or new == sources or self.quotes is None:
            return None
        smaller = self.by_sources.get(new)
        if smaller is None or smaller is item or id(smaller) in self.taken or not self.quotes(item, smaller):
            return None
        return smaller
