"""The time window a recall query refers to ("last spring", "in June 2023"), if any.

Windows come from the same conservative rules the fact extractor uses
(``tempr.dates``), resolved against the query timestamp, so a fact dated "last
spring" at retain time and a query about "last spring" agree on what that means.

A query anchored on an event instead of a date ("before Alice joined Google") names the event;
the pipeline looks up when the best-matching fact happened and `anchored_window` turns that
date into the window before (a year up to it) or after it (from it to the query time).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Literal

from tempr.dates import parse_time_expression

__all__ = ["EventAnchor", "QueryWindow", "anchored_window", "event_anchor", "query_window"]

Direction = Literal["before", "after"]
_ANCHOR = re.compile(
    r"\b(?P<word>before|after|since|until|prior to|following)\s+(?P<event>[^?.!;,]{4,120})", re.IGNORECASE
)
_AFTER_WORDS = {"after", "since", "following"}

# width_bucket needs a non-empty range; a point in time becomes one second.
_MIN_SPAN = timedelta(seconds=1)


@dataclass(frozen=True, slots=True)
class QueryWindow:
    start: datetime
    end: datetime
    expression: str

    @property
    def center(self) -> datetime:
        return self.start + (self.end - self.start) / 2


def query_window(query: str, reference: datetime) -> QueryWindow | None:
    """The query's time window relative to ``reference`` (UTC), or None when it names none."""
    ref = reference if reference.tzinfo else reference.replace(tzinfo=UTC)
    found = parse_time_expression(query, ref)
    if found is None:
        return None
    start, end = found.start.astimezone(UTC), found.end.astimezone(UTC)
    if end - start < _MIN_SPAN:
        end = start + _MIN_SPAN
    return QueryWindow(start=start, end=end, expression=found.expression)


@dataclass(frozen=True, slots=True)
class EventAnchor:
    direction: Direction
    event: str


def event_anchor(query: str) -> EventAnchor | None:
    """ "What did Alice do before she joined Google?" → before / "she joined Google"."""
    match = _ANCHOR.search(query)
    if match is None:
        return None
    word = match.group("word").lower()
    direction: Direction = "after" if word in _AFTER_WORDS else "before"
    return EventAnchor(direction, match.group("event").strip())


def anchored_window(
    anchor: EventAnchor, event_date: datetime, reference: datetime, *, before_days: float = 365.0
) -> QueryWindow:
    """The window before the event (``before_days`` up to it) or after it (up to ``reference``)."""
    when = event_date if event_date.tzinfo else event_date.replace(tzinfo=UTC)
    ref = reference if reference.tzinfo else reference.replace(tzinfo=UTC)
    if anchor.direction == "before":
        start, end = when - timedelta(days=before_days), when
    else:
        start, end = when, max(ref, when + _MIN_SPAN)
    expression = f"{anchor.direction} {anchor.event} ({when:%-d %B %Y})"
    return QueryWindow(start=start.astimezone(UTC), end=end.astimezone(UTC), expression=expression)
