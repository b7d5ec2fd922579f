"""The input limits' defaults, and where validators read the limits in force.

Request models and events (`tempr.schemas`) validate against these limits, and the lean client
installs them without pydantic-settings. So the numbers live here, the `TEMPR_MAX_*` settings
default to them, and importing `tempr.settings` (every server process does) makes the
settings the source. Without the settings, as in the lean client, the defaults apply.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol

__all__ = ["DEFAULT_LIMITS", "InputLimits", "Limits", "limits", "use_limits"]


class Limits(Protocol):
    @property
    def max_message_bytes(self) -> int: ...
    @property
    def max_body_bytes(self) -> int: ...
    @property
    def max_items(self) -> int: ...
    @property
    def max_content_bytes(self) -> int: ...
    @property
    def max_metadata_bytes(self) -> int: ...
    @property
    def max_metadata_depth(self) -> int: ...
    @property
    def max_tags(self) -> int: ...
    @property
    def max_tag_chars(self) -> int: ...
    @property
    def max_query_chars(self) -> int: ...
    @property
    def max_offset(self) -> int: ...
    @property
    def min_timestamp(self) -> datetime: ...
    @property
    def max_timestamp(self) -> datetime: ...


@dataclass(frozen=True)
class InputLimits:
    max_message_bytes: int = 1_000_000
    max_body_bytes: int = 8_000_000
    max_items: int = 1000
    max_content_bytes: int = 200_000
    max_metadata_bytes: int = 16_000
    max_metadata_depth: int = 8
    max_tags: int = 64
    max_tag_chars: int = 128
    max_query_chars: int = 4000
    max_offset: int = 10_000_000
    min_timestamp: datetime = datetime(1000, 1, 1, tzinfo=UTC)
    max_timestamp: datetime = datetime(3000, 1, 1, tzinfo=UTC)


DEFAULT_LIMITS = InputLimits()

_source: Callable[[], Limits] = lambda: DEFAULT_LIMITS  # noqa: E731


def use_limits(source: Callable[[], Limits]) -> None:
    """Make `source` (the settings, in a server process) what validators read from now on."""
    global _source
    _source = source


def limits() -> Limits:
    """The limits in force; read at validation time, not at import."""
    return _source()
