"""Embeddings as query parameters: pgvector's binary form (the codec `store/pool.py` registers).

Sent as `$n::vector[]`, a fact's 384 float32 travel as 1.5 kB of bytes, exactly; their text form
(`'[0.0123,...]'`, each float printed so that it reads back the same) took ~0.17 ms of the
worker's event loop per vector to print and ~5 kB to send, and Postgres parsed it back.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from pgvector import Vector

__all__ = ["vector_params"]


def vector_params(embeddings: Sequence[Sequence[float] | np.ndarray]) -> list[Vector]:
    """One `Vector` each: asyncpg would read a bare list or array as a nested SQL array."""
    return [Vector(np.asarray(e, dtype=np.float32)) for e in embeddings]
