"""Deterministic identifiers: the same input always yields the same id, so redelivery upserts."""

from __future__ import annotations

import hashlib
import re
import uuid
from typing import Annotated

from pydantic import StringConstraints

__all__ = ["BANK_ID_PATTERN", "BankId", "content_hash", "stable_id", "text_key"]

BANK_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$"
BankId = Annotated[str, StringConstraints(pattern=BANK_ID_PATTERN)]

_NAMESPACE = uuid.UUID("6f1c2a8e-6d1b-4f7e-9f55-2f4a7f0c9b31")


def stable_id(*parts: object) -> uuid.UUID:
    """uuid5 over the parts, joined with an unambiguous separator."""
    return uuid.uuid5(_NAMESPACE, "\x1f".join(str(p) for p in parts))


def content_hash(*parts: object) -> str:
    return hashlib.sha256("\x1f".join(str(p) for p in parts).encode()).hexdigest()


def text_key(text: str) -> str:
    """A text as an id part: case and spacing do not make a different opinion or observation."""
    return re.sub(r"\s+", " ", text.strip().lower())
