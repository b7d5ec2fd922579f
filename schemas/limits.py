"""Bounds on every input, one definition for the API, the producer helper and the segmenter.

The numbers are settings (`TEMPR_MAX_*`, read when a value is validated, not at import); the
rules are annotated types used by the request models and the message event, so a value the
API refuses is refused the same way by `TemprProducer` and by the segmenter for records
produced straight to Kafka.

Text is refused, never repaired: a NUL or a lone surrogate cannot be stored by Postgres (or
encoded as UTF-8), and silently dropping characters would change what was said.
"""

from __future__ import annotations

import json
import math
from datetime import datetime
from typing import Annotated, Any

from pydantic import AfterValidator, AwareDatetime

from tempr.limits import limits

__all__ = [
    "Content",
    "JsonSchema",
    "Metadata",
    "Query",
    "SafeText",
    "Tags",
    "Timestamp",
    "check_json_value",
    "check_text",
    "check_timestamp",
]


def check_text(value: str) -> str:
    """No NUL and no lone surrogate (the only code points UTF-8 and Postgres text refuse)."""
    if "\x00" in value:
        raise ValueError("must not contain NUL (\\u0000)")
    if value.isascii():
        return value
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(f"must not contain a lone surrogate (at character {exc.start})") from None
    return value


def _content(value: str) -> str:
    check_text(value)
    size = len(value) if value.isascii() else len(value.encode("utf-8"))
    if size > limits().max_content_bytes:
        raise ValueError(f"is {size} bytes, more than TEMPR_MAX_CONTENT_BYTES ({limits().max_content_bytes})")
    return value


def check_json_value(value: Any, *, max_depth: int) -> Any:
    """Finite numbers, safe text in keys and values, nesting at most `max_depth`."""
    stack = [(value, 1)]
    while stack:
        node, d = stack.pop()
        if isinstance(node, dict | list):
            if d > max_depth:
                raise ValueError(f"is nested deeper than TEMPR_MAX_METADATA_DEPTH ({max_depth})")
            if isinstance(node, dict):
                for key in node:
                    check_text(str(key))
                stack.extend((child, d + 1) for child in node.values())
            else:
                stack.extend((child, d + 1) for child in node)
        elif isinstance(node, str):
            check_text(node)
        elif isinstance(node, float) and not math.isfinite(node):
            raise ValueError("must not contain NaN or Infinity")
    return value


_PART_KEYS = frozenset({"part", "parts"})


def _metadata(value: dict[str, Any]) -> dict[str, Any]:
    if not value:
        return value
    bounds = limits()
    check_json_value(value, max_depth=bounds.max_metadata_depth)
    # The segmenter numbers the parts of a long item in its metadata (`part`, `parts`): those
    # two integers must not push an item accepted at the limit over it downstream.
    counted = {k: v for k, v in value.items() if not (k in _PART_KEYS and isinstance(v, int))}
    size = len(json.dumps(counted, ensure_ascii=False, default=str).encode("utf-8"))
    if size > bounds.max_metadata_bytes:
        raise ValueError(
            f"is {size} bytes as JSON, more than TEMPR_MAX_METADATA_BYTES ({bounds.max_metadata_bytes})"
        )
    return value


def _tags(value: list[str]) -> list[str]:
    bounds = limits()
    if len(value) > bounds.max_tags:
        raise ValueError(f"has {len(value)} tags, more than TEMPR_MAX_TAGS ({bounds.max_tags})")
    for tag in value:
        check_text(tag)
        if len(tag) > bounds.max_tag_chars:
            raise ValueError(f"has a tag longer than TEMPR_MAX_TAG_CHARS ({bounds.max_tag_chars})")
    return value


def check_timestamp(value: datetime | None) -> datetime | None:
    """Within the supported range: date arithmetic downstream ("a year later") never overflows."""
    if value is None:
        return value
    bounds = limits()
    if not bounds.min_timestamp <= value <= bounds.max_timestamp:
        raise ValueError(
            f"must fall between {bounds.min_timestamp.isoformat()} and {bounds.max_timestamp.isoformat()} "
            "(TEMPR_MIN_TIMESTAMP / TEMPR_MAX_TIMESTAMP)"
        )
    return value


def _query(value: str) -> str:
    check_text(value)
    if len(value) > limits().max_query_chars:
        raise ValueError(
            f"is {len(value)} characters, more than TEMPR_MAX_QUERY_CHARS ({limits().max_query_chars})"
        )
    return value


def _json_schema(value: dict[str, Any]) -> dict[str, Any]:
    check_json_value(value, max_depth=4 * limits().max_metadata_depth)
    return value


SafeText = Annotated[str, AfterValidator(check_text)]
Query = Annotated[str, AfterValidator(_query)]
JsonSchema = Annotated[dict[str, Any], AfterValidator(_json_schema)]
Content = Annotated[str, AfterValidator(_content)]
Metadata = Annotated[dict[str, Any], AfterValidator(_metadata)]
Tags = Annotated[list[str], AfterValidator(_tags)]
Timestamp = Annotated[AwareDatetime, AfterValidator(check_timestamp)]
