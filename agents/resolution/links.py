"""Links between memory units: temporal, semantic, entity and causal.

Direction. Temporal, semantic and entity links are symmetric and stored ONCE per pair, oriented
``from_id < to_id`` (UUID order, which is also Postgres' uuid order). The orientation is a pure
function of the pair, so re-running a batch, or a fact being "new" in one run and "existing" in
a replay, upserts the same row instead of adding the mirrored one. Readers (the graph arm) must
traverse links in both directions; ``memory_links_to_idx`` serves the reverse lookup. Causal links
are directed (from the fact that carries the edge to its target) and keep their relation name.

Fan-out. Every cap is enforced on both ends of a pair for the facts being inserted: pairs are
taken greedily, best first, and a pair is skipped once one of its *new* endpoints is full. A
new fact therefore ends a build with at most ``max_per_fact`` temporal links, ``top_k`` semantic
links, and ``max_per_entity`` links through each of its entities. Existing facts are not capped
here (their current degree lives in the database); each build adds at most one link per new
fact to any of them.
"""

from __future__ import annotations

import heapq
import math
from bisect import bisect_left
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import cast, get_args
from uuid import UUID

import numpy as np

from tempr.schemas.events import LinkType, MemoryLink

__all__ = [
    "CausalEdge",
    "FactPoint",
    "build_links",
    "causal_links",
    "entity_link_weight",
    "entity_links",
    "semantic_links",
    "temporal_links",
]

CausalEdge = tuple[UUID, str, float]
_CAUSAL_TYPES = frozenset({"causes", "caused_by", "enables", "prevents"})
_LINK_ORDER = {name: i for i, name in enumerate(get_args(LinkType))}
_Pair = tuple[UUID, UUID]
# (sort key, pair, weight); the key orders pairs best first.
_Candidate = tuple[tuple[float, int, int], _Pair, float]


@dataclass(slots=True)
class FactPoint:
    """What link building needs to know about one memory unit.

    ``when`` is the fact's occurred_start, else mentioned_at; naive datetimes are taken as UTC.
    ``embedding`` need not be normalized. ``causal`` holds (target_unit_id, relation, weight).
    """

    unit_id: UUID
    when: datetime | None = None
    embedding: Sequence[float] | np.ndarray | None = None
    entity_ids: set[UUID] = field(default_factory=set)
    causal: list[CausalEdge] = field(default_factory=list)
    # The normalized embedding, computed on first use (`_unit_vector`): a recent fact takes
    # part in the builds of many later chunks, and converting its 384 floats each time cost
    # more than the products.
    _unit: np.ndarray | None = field(default=None, init=False, repr=False, compare=False)


# --------------------------------------------------------------------------- shared helpers


def _timestamp(moment: datetime | None) -> float | None:
    if moment is None:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def _canonical(a: UUID, b: UUID) -> _Pair:
    return (a, b) if a.int < b.int else (b, a)


def _candidate(score: float, a: UUID, b: UUID, weight: float) -> _Candidate:
    pair = _canonical(a, b)
    return (score, pair[0].int, pair[1].int), pair, weight


def _pool(new: Sequence[FactPoint], existing: Sequence[FactPoint]) -> dict[UUID, FactPoint]:
    """All facts by id; a fact given as both new and existing counts as new."""
    pool = {f.unit_id: f for f in existing}
    pool.update((f.unit_id, f) for f in new)
    return pool


def _new_ids(new: Sequence[FactPoint]) -> set[UUID]:
    return {f.unit_id for f in new}


def _select_capped(candidates: Iterable[_Candidate], new_ids: set[UUID], cap: int) -> dict[_Pair, float]:
    """Greedy best-first choice of pairs such that no new fact exceeds ``cap`` pairs."""
    degree: dict[UUID, int] = defaultdict(int)
    chosen: dict[_Pair, float] = {}
    for _, pair, weight in sorted(candidates, key=lambda c: c[0]):
        if pair in chosen or pair[0] == pair[1]:
            continue
        if any(node in new_ids and degree[node] >= cap for node in pair):
            continue
        chosen[pair] = weight
        degree[pair[0]] += 1
        degree[pair[1]] += 1
    return chosen


def _links(pairs: dict[_Pair, float], link_type: LinkType) -> list[MemoryLink]:
    return _sorted(_link(a, b, link_type, _clamp(w)) for (a, b), w in pairs.items())


def _link(a: UUID, b: UUID, link_type: LinkType, weight: float) -> MemoryLink:
    """A link built from checked parts (UUIDs, a known type, a clamped weight): constructed
    without validation, which cost more than the rest of link building (26 links a fact)."""
    return MemoryLink.model_construct(from_id=a, to_id=b, link_type=link_type, weight=weight)


def _clamp(weight: float) -> float:
    return round(min(1.0, max(0.0, float(weight))), 6)


def _sorted(links: Iterable[MemoryLink]) -> list[MemoryLink]:
    return sorted(links, key=lambda lk: (_LINK_ORDER[lk.link_type], lk.from_id.int, lk.to_id.int))


class _Timeline:
    """Facts sorted by time, for nearest-in-time lookups by walking outward from a point."""

    def __init__(self, facts: Iterable[FactPoint]) -> None:
        dated = sorted(
            ((ts, f.unit_id) for f in facts if (ts := _timestamp(f.when)) is not None),
            key=lambda item: (item[0], item[1].int),
        )
        self.times = [ts for ts, _ in dated]
        self.ids = [uid for _, uid in dated]

    def nearest(
        self, center: float, exclude: UUID, k: int, max_delta: float = math.inf
    ) -> list[tuple[float, UUID]]:
        """Up to ``k`` (delta, id) with delta < ``max_delta``, nearest first, ties by id."""
        found: list[tuple[float, UUID]] = []
        lo = bisect_left(self.times, center) - 1
        hi = lo + 1
        while True:
            d_lo = center - self.times[lo] if lo >= 0 else math.inf
            d_hi = self.times[hi] - center if hi < len(self.times) else math.inf
            delta = min(d_lo, d_hi)
            if delta >= max_delta or (len(found) >= k and delta > found[k - 1][0]):
                break
            if d_lo <= d_hi:
                uid, lo = self.ids[lo], lo - 1
            else:
                uid, hi = self.ids[hi], hi + 1
            if uid != exclude:
                found.append((delta, uid))
        found.sort(key=lambda item: (item[0], item[1].int))
        return found[:k]


# --------------------------------------------------------------------------- temporal


def temporal_links(
    new: Sequence[FactPoint],
    existing: Sequence[FactPoint] = (),
    *,
    window_hours: float = 24.0,
    max_per_fact: int = 20,
    min_weight: float = 0.3,
) -> list[MemoryLink]:
    """Link facts less than ``window_hours`` apart; weight = max(min_weight, 1 - Δ/window).

    Undated facts get no temporal links. Closest pairs are kept first (ties by id).
    """
    if max_per_fact <= 0 or window_hours <= 0:
        return []
    window = window_hours * 3600.0
    new_ids = _new_ids(new)
    timeline = _Timeline(_pool(new, existing).values())
    # Trimming to cap + len(new) - 1 per fact is lossless: the greedy pass can skip at most
    # len(new) - 1 of a fact's candidates, namely those whose other (new) endpoint is full.
    reach = max_per_fact + len(new_ids) - 1
    candidates: list[_Candidate] = []
    for fact in new:
        ts = _timestamp(fact.when)
        if ts is None:
            continue
        for delta, other in timeline.nearest(ts, fact.unit_id, reach, window):
            weight = max(min_weight, 1.0 - delta / window)
            candidates.append(_candidate(delta, fact.unit_id, other, weight))
    return _links(_select_capped(candidates, new_ids, max_per_fact), "temporal")


# --------------------------------------------------------------------------- semantic


def _unit_rows(facts: Sequence[FactPoint]) -> tuple[list[UUID], np.ndarray]:
    """Ids and L2-normalized embeddings of the facts that have a usable embedding."""
    ids: list[UUID] = []
    rows: list[np.ndarray] = []
    for fact in facts:
        vector = _unit_vector(fact)
        if vector is None:
            continue
        if rows and vector.shape != rows[0].shape:
            raise ValueError(
                f"embedding of {fact.unit_id} has dimension {vector.size}, expected {rows[0].size}"
            )
        ids.append(fact.unit_id)
        rows.append(vector)
    matrix = np.vstack(rows) if rows else np.zeros((0, 0))
    return ids, matrix


_UNUSABLE = np.zeros(0)  # memo of an embedding that is missing, empty, zero or not finite


def _unit_vector(fact: FactPoint) -> np.ndarray | None:
    if fact._unit is None:
        fact._unit = _UNUSABLE
        if fact.embedding is not None:
            vector = np.asarray(fact.embedding, dtype=np.float64).ravel()
            norm = float(np.linalg.norm(vector))
            if vector.size and math.isfinite(norm) and norm != 0.0:
                fact._unit = vector / norm
    return None if fact._unit is _UNUSABLE else fact._unit


def semantic_links(
    new: Sequence[FactPoint],
    existing: Sequence[FactPoint] = (),
    *,
    threshold: float = 0.7,
    top_k: int = 10,
) -> list[MemoryLink]:
    """Link facts whose cosine similarity is >= ``threshold``; weight = cosine."""
    if top_k <= 0:
        return []
    new_ids = _new_ids(new)
    ids, matrix = _unit_rows(list(_pool(new, existing).values()))
    if not ids:
        return []
    rows = [i for i, uid in enumerate(ids) if uid in new_ids]
    sims = matrix[rows] @ matrix.T
    # Lossless trim, as in temporal_links: a fact can lose at most len(new) - 1 candidates.
    reach = top_k + len(new_ids) - 1
    candidates: list[_Candidate] = []
    for row, i in enumerate(rows):
        above = [
            _candidate(-float(sims[row, j]), ids[i], ids[j], float(sims[row, j]))
            for j in np.flatnonzero(sims[row] >= threshold)
            if j != i
        ]
        candidates.extend(heapq.nsmallest(reach, above, key=lambda c: c[0]))
    return _links(_select_capped(candidates, new_ids, top_k), "semantic")


# --------------------------------------------------------------------------- entity


def entity_link_weight(shared: int) -> float:
    """1 - 0.5^(shared+1): 0.75 for one shared entity, 0.875 for two, 0.9375 for three, ..."""
    return 1.0 - 0.5 ** (shared + 1) if shared > 0 else 0.0


def _entity_neighbours(
    fact: FactPoint, members: Sequence[FactPoint], timeline: _Timeline, reach: int
) -> list[tuple[float, UUID]]:
    """Members nearest in time to ``fact`` (most recent first when ``fact`` is undated)."""
    ts = _timestamp(fact.when)
    if ts is not None:
        found = timeline.nearest(ts, fact.unit_id, reach)
    else:
        found = [(math.inf, uid) for uid in reversed(timeline.ids) if uid != fact.unit_id][:reach]
    if len(found) < reach:
        undated = sorted(
            (m.unit_id for m in members if m.when is None and m.unit_id != fact.unit_id),
            key=lambda uid: uid.int,
        )
        found.extend((math.inf, uid) for uid in undated[: reach - len(found)])
    return found


def entity_links(
    new: Sequence[FactPoint],
    existing: Sequence[FactPoint] = (),
    *,
    max_per_entity: int = 10,
) -> list[MemoryLink]:
    """Link facts that share an entity; weight by `entity_link_weight` of the shared count.

    Through each entity a new fact links to at most ``max_per_entity`` facts, the closest in
    time: without the cap an entity in every fact (the speaker) would make the graph quadratic.
    """
    if max_per_entity <= 0:
        return []
    pool = _pool(new, existing)
    new_ids = _new_ids(new)
    by_entity: dict[UUID, list[FactPoint]] = defaultdict(list)
    for fact in pool.values():
        for entity_id in fact.entity_ids:
            by_entity[entity_id].append(fact)
    pairs: set[_Pair] = set()
    for entity_id in sorted({e for f in new for e in f.entity_ids}, key=lambda e: e.int):
        members = by_entity[entity_id]
        new_members = [m for m in members if m.unit_id in new_ids]
        timeline = _Timeline(members)
        reach = max_per_entity + len(new_members) - 1
        candidates = [
            _candidate(delta, fact.unit_id, other, 0.0)
            for fact in new_members
            for delta, other in _entity_neighbours(fact, members, timeline, reach)
        ]
        pairs.update(_select_capped(candidates, new_ids, max_per_entity))
    weights = {(a, b): entity_link_weight(len(pool[a].entity_ids & pool[b].entity_ids)) for a, b in pairs}
    return _links(weights, "entity")


# --------------------------------------------------------------------------- causal


def causal_links(new: Sequence[FactPoint]) -> list[MemoryLink]:
    """Directed links from each fact's causal edges; self edges are dropped, duplicates keep max."""
    best: dict[tuple[UUID, UUID, str], float] = {}
    for fact in new:
        for target, relation, weight in fact.causal:
            if relation not in _CAUSAL_TYPES:
                raise ValueError(f"unknown causal relation {relation!r} on {fact.unit_id}")
            if target == fact.unit_id:
                continue
            key = (fact.unit_id, target, relation)
            best[key] = max(best.get(key, 0.0), _clamp(weight))
    return _sorted(_link(a, b, cast(LinkType, rel), w) for (a, b, rel), w in best.items())


# --------------------------------------------------------------------------- all together


def build_links(
    new: Sequence[FactPoint],
    existing: Sequence[FactPoint] = (),
    *,
    window_hours: float = 24.0,
    max_temporal_per_fact: int = 20,
    temporal_min_weight: float = 0.3,
    semantic_threshold: float = 0.7,
    semantic_top_k: int = 10,
    max_per_entity: int = 10,
) -> list[MemoryLink]:
    """All four link kinds, one link per (from, to, type) with the highest weight."""
    links = [
        *temporal_links(
            new,
            existing,
            window_hours=window_hours,
            max_per_fact=max_temporal_per_fact,
            min_weight=temporal_min_weight,
        ),
        *semantic_links(new, existing, threshold=semantic_threshold, top_k=semantic_top_k),
        *entity_links(new, existing, max_per_entity=max_per_entity),
        *causal_links(new),
    ]
    best: dict[tuple[UUID, UUID, str], MemoryLink] = {}
    for link in links:
        key = (link.from_id, link.to_id, link.link_type)
        if key not in best or link.weight > best[key].weight:
            best[key] = link
    return _sorted(best.values())
