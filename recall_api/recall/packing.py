"""Greedy token-budget packing of ranked results."""

from __future__ import annotations

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
) -> tuple[list[T], int]:
    """Take items in rank order while their text fits in ``max_tokens``.

    An item that does not fit in what is left is skipped and the walk goes on, so one long
    fact cannot crowd out shorter ones ranked below it. The walk stops once the budget is
    exactly spent. If nothing fits (including ``max_tokens <= 0``) the top item is returned
    alone, whatever its size, so a non-empty ranking never packs to an empty answer.

    Returns the kept items and the tokens they use.
    """
    kept: list[T] = []
    used = 0
    top_cost: int | None = None
    for item in items:
        remaining = max_tokens - used
        if remaining <= 0:
            break
        cost = count(text_of(item))
        if top_cost is None:
            top_cost = cost
        if cost <= remaining:
            kept.append(item)
            used += cost
    if kept or not items:
        return kept, used
    return [items[0]], top_cost if top_cost is not None else count(text_of(items[0]))
