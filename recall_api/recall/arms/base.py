"""What every retrieval arm shares: its context, its hits, and the registry it joins.

An arm is an async function from the pool and an ``ArmContext`` to an ``ArmResult``,
registered with ``@recall_arm("name")`` in a module of this package; its switch is the
``RecallConfig`` field of the same name (``arm_switch()``). Every enabled arm starts at once;
an arm that builds on others' hits (the graph arm) awaits them through ``ctx.others``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

import asyncpg
import numpy as np

from tempr.recall_api.recall.config import RecallConfig
from tempr.recall_api.recall.temporal import QueryWindow
from tempr.store import recall as sql

__all__ = [
    "ArmContext",
    "ArmFunction",
    "ArmHit",
    "ArmResult",
    "ArmSpec",
    "OtherArms",
    "recall_arm",
    "registered_specs",
]


@dataclass(frozen=True, slots=True)
class ArmHit:
    unit_id: UUID
    score: float
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class ArmResult:
    arm: str
    hits: list[ArmHit]
    elapsed_ms: float = 0.0
    note: str | None = None

    @property
    def ids(self) -> list[UUID]:
        return [h.unit_id for h in self.hits]


@dataclass(slots=True)
class OtherArms:
    """The other arms of the same recall, as they finish: an arm that starts from their hits
    awaits them here. Two arms awaiting each other would wait for ever: only one may."""

    pending: Mapping[str, Awaitable[ArmResult]] = field(default_factory=dict)

    def runs(self, arm: str) -> bool:
        return arm in self.pending

    async def hits(self, arm: str) -> list[ArmHit]:
        task = self.pending.get(arm)
        return [] if task is None else (await task).hits


@dataclass(frozen=True, slots=True)
class ArmContext:
    bank_id: str
    keyword_text: str  # the question, less the bank's ubiquitous names (see query_vector)
    embedding: np.ndarray | None
    filters: sql.RecallFilters
    limit: int
    cfg: RecallConfig
    bank_size: int
    window: QueryWindow | None = None
    ubiquitous_entities: tuple[UUID, ...] = ()  # see RecallConfig.ubiquitous_min_mentions
    indexed: bool = False  # the bank has a vector index of its own (store/vector_indexes.py)
    keyword_stats: bool = False  # and keyword statistics (store/keyword_stats.py)
    others: OtherArms = field(default_factory=OtherArms)

    @property
    def exact(self) -> bool:
        return not self.indexed

    @property
    def ef_search(self) -> int:
        return min(max(self.limit, self.cfg.ef_search_min), self.cfg.ef_search_max)


ArmFunction = Callable[[asyncpg.Pool, ArmContext], Awaitable[ArmResult]]


@dataclass(frozen=True, slots=True)
class ArmSpec:
    name: str
    run: ArmFunction
    # An arm that needs no query vector (keyword) lets a recall skip the embedding.
    needs_vector: bool = True


_REGISTRY: dict[str, ArmSpec] = {}


def recall_arm(name: str, *, needs_vector: bool = True) -> Callable[[ArmFunction], ArmFunction]:
    """Register the decorated function as the arm ``name``; the function itself is unchanged."""

    def register(run: ArmFunction) -> ArmFunction:
        if name in _REGISTRY and _REGISTRY[name].run is not run:
            raise ValueError(f"recall arm {name!r} is registered twice")
        _REGISTRY[name] = ArmSpec(name, run, needs_vector)
        return run

    return register


def registered_specs() -> Mapping[str, ArmSpec]:
    return _REGISTRY
