"""The query's vector: the question as asked, blended with the question without the names
that are in most of the bank's facts.

In a conversation bank every fact names its speakers ("Melanie said to Caroline: ..."), and
so does nearly every question ("What has Melanie bought?"). In the question's embedding
the name then outweighs what is asked about, and the nearest facts are those that say
"Melanie" most, not those about buying. Such a name tells facts apart no better than "the";
half of the vector comes from the question without it, so what is asked gets its weight
back while the name still counts. Names in fewer facts are left in: they select.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import numpy as np

__all__ = ["blend", "strip_names", "without_names", "worth_embedding"]

_SPACES = re.compile(r"\s+")


def strip_names(query: str, names: Iterable[str]) -> str:
    """``query`` with each name (and its possessive) taken out and spaces tidied; it may be
    the query unchanged, or nothing but punctuation."""
    stripped = query
    for name in sorted({n for n in names if n.strip()}, key=len, reverse=True):  # "Mel" after "Melanie"
        stripped = re.sub(rf"\b{re.escape(name)}(?:['’]s)?\b", " ", stripped, flags=re.IGNORECASE)
    return _SPACES.sub(" ", stripped).strip()


def without_names(query: str, names: Iterable[str]) -> str | None:
    """The query without ``names`` for embedding, or None when no name is in it or nothing
    would be left but punctuation."""
    return worth_embedding(query, strip_names(query, names))


def worth_embedding(query: str, stripped: str) -> str | None:
    """``stripped`` (``query`` after `strip_names`) when it differs from the query and still
    asks something, else None: for a caller that already stripped the names."""
    if stripped == _SPACES.sub(" ", query).strip() or not any(c.isalnum() for c in stripped):
        return None
    return stripped


def blend(asked: np.ndarray, without: np.ndarray, weight: float) -> np.ndarray:
    """Unit vector of ``weight * asked + (1 - weight) * without`` (both unit vectors)."""
    mixed = weight * np.asarray(asked, dtype=np.float32) + (1.0 - weight) * np.asarray(
        without, dtype=np.float32
    )
    norm = float(np.linalg.norm(mixed))
    return mixed / norm if norm > 0 else np.asarray(asked, dtype=np.float32)
