"""Deterministic identifiers: the same input always yields the same id, so redelivery upserts."""

from __future__ import annotations

import hashlib
import re
import uuid
from typing import Annotated

from pydantic import StringConstraints

__all__ = ["BANK_ID_PATTERN", "BankId", "content_hash", "imported_id", "lineage_id", "stable_id", "text_key"]

BANK_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$"
BankId = Annotated[str, StringConstraints(pattern=BANK_ID_PATTERN)]

_NAMESPACE = uuid.UUID("6f1c2a8e-6d1b-4f7e-9f55-2f4a7f0c9b31")
_IMPORT_NAMESPACE = uuid.UUID("1f0e5c3a-6b2d-4f7e-9a51-3c8d2e7b9f40")


def stable_id(*parts: object) -> uuid.UUID:
    """uuid5 over the parts, joined with an unambiguous separator."""
    return uuid.uuid5(_NAMESPACE, "\x1f".join(str(p) for p in parts))


def content_hash(*parts: object) -> str:
    return hashlib.sha256("\x1f".join(str(p) for p in parts).encode()).hexdigest()


def text_key(text: str) -> str:
    """A text as an id part: case and spacing do not make a different opinion or observation."""
    return re.sub(r"\s+", " ", text.strip().lower())


def imported_id(target_bank: str, value: object) -> uuid.UUID:
    """A row's id in a bank imported under another id (`--as`): the copy lives beside the
    original, and importing it twice maps every id the same way."""
    return uuid.uuid5(_IMPORT_NAMESPACE, f"{target_bank}\n{value}")


def lineage_id(origin_id: uuid.UUID, lineage: list[str], bank_id: str) -> uuid.UUID:
    """The id, in `bank_id`, of what its first ancestor (`lineage[0]`) calls `origin_id`:
    mapped through every later import as each import mapped it."""
    out = origin_id
    for bank in [*lineage[1:], bank_id]:
        out = imported_id(bank, out)
    return out
