"""Greedy token-budget packing of ranked results."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import TypeVar

from inference.tokens import count_tokens

__all__ = ["pack_by_tokens"]

T = TypeVar("T")


def pack_by_tokens(
    items: Sequence[T],
    text_of: Callable[[T], str],
    max_tokens: int,
    count: Callable[[str], int] = count_tokens,
    *,
    sources_of: Callable[[T], Sequence[str]] | None = None,
    quotes: Callable[[T, T], bool] | None = None,
) -> tuple[list[T], int]:
    """Take items in rank order while their text fits in ``max_tokens``.

    An item that does not fit in what is left is skipped and the walk goes on, so one long
    fact cannot crowd out shorter ones ranked below it. The walk stops once the budget is
    exactly spent. If nothing fits (including ``max_tokens <= 0``) the top item is returned
    alone, whatever its size, so a non-empty ranking never packs to an empty answer.

    With ``sources_of`` and ``quotes(big, small)``, an item absorbs the kept ones it
    repeats: those from strictly fewer of its own sources whose text it quotes. It takes the
    place of the first of them and pays only for what it adds, so the answer never carries
    the same text twice (a turn's fact, then the fact of the exchange quoting that turn).

    Returns the kept items and the tokens they use.
    """
    absorbing = sources_of is not None and quotes is not None
    slots: list[tuple[T, int, frozenset[str]] | None] = []  # None: absorbed later
    by_source: dict[str, list[int]] = defaultdict(list)
    used = 0
    top_cost: int | None = None
    for item in items:
        remaining = max_tokens - used
        if remaining <= 0:
            break
        cost = count(text_of(item))
        if top_cost is None:
            top_cost = cost
        sources = frozenset(sources_of(item)) if absorbing else frozenset()  # type: ignore[misc]
        absorbed = _absorbed(item, sources, slots, by_source, quotes) if len(sources) > 1 else []  # type: ignore[arg-type]
        freed = sum(slots[i][1] for i in absorbed)  # type: ignore[index]
        if cost - freed > remaining:
            continue
        if absorbed:
            slots[absorbed[0]] = (item, cost, sources)
            for i in absorbed[1:]:
                slots[i] = None
            at = absorbed[0]
        else:
            slots.append((item, cost, sources))
            at = len(slots) - 1
        for source in sources:
            by_source[source].append(at)
        used += cost - freed
    kept = [slot[0] for slot in slots if slot is not None]
    if kept or not items:
        return kept, used
    return [items[0]], top_cost if top_cost is not None else count(text_of(items[0]))


def _absorbed(
    item: T,
    sources: frozenset[str],
    slots: list[tuple[T, int, frozenset[str]] | None],
    by_source: dict[str, list[int]],
    quotes: Callable[[T, T], bool],
) -> list[int]:
    """Positions of kept items that ``item`` repeats, in order."""
    found: set[int] = set()
    for source in sources:
        for i in by_source.get(source, ()):
            slot = slots[i]
            if i in found or slot is None:
                continue
            if slot[2] and slot[2] < sources and quotes(item, slot[0]):
                found.add(i)
    return sorted(found)
