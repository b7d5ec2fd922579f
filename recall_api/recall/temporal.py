"""The time window a recall query refers to ("last spring", "in June 2023"), if any.

Windows come from the same conservative rules the fact extractor uses
(``agents.extraction.dates``), resolved against the query timestamp, so a fact dated "last
spring" at retain time and a query about "last spring" agree on what that means. Anchoring
on an undated event ("before Alice joined Google") is not handled: such queries get no window
and rely on the other arms.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from agents.extraction.dates import parse_time_expression

__all__ = ["QueryWindow", "query_window"]

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
