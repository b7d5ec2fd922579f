"""Meta-path forward push (MPFP): the graph arm as typed walks from the other arms' hits.

Mass starts on seed facts (the semantic arm's best hits; the temporal arm's when the query
names a time) and is pushed along a meta-path, one edge type per hop, as in forward push for
personalized PageRank: a node keeps a share ``alpha`` of its mass as its score and pushes the
rest to its heaviest ``top_k`` neighbours over that hop's edge type, their weights normalized
to sum to 1. Mass below ``threshold`` is dropped, so the work is bounded by the seeds, the
fan-out and the pruning, never by the size of the bank. Each pattern runs on its own and the
patterns' rankings are fused by reciprocal rank. See ``shared/reference/graph-retrieval-mpfp.md``.

The arithmetic is pure (``forward_push`` and its steps, unit-tested on hand-made graphs); the
retriever fetches each hop's neighbours for every pattern at once (``store.graph``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from uuid import UUID

import asyncpg

from tempr.recall_api.recall.arms.base import ArmContext, ArmHit, ArmResult
from tempr.recall_api.recall.fusion import fuse_candidates
from tempr.store import graph as graph_sql
from tempr.store import recall as sql

__all__ = [
    "SEMANTIC_PATTERNS",
    "TEMPORAL_PATTERNS",
    "Adjacency",
    "MpfpRetriever",
    "Push",
    "finish",
    "forward_push",
    "normalize_top",
    "push_hop",
    "seed_mass",
]

Pattern = tuple[str, ...]
# (node, edge type) -> its neighbours over that type with normalized weights, heaviest first.
Adjacency = Mapping[tuple[UUID, str], Sequence[tuple[UUID, float]]]

SEMANTIC_PATTERNS: tuple[Pattern, ...] = (
    ("semantic", "semantic"),  # the neighbourhood of the topic
    ("entity", "temporal"),  # an entity's timeline
    ("semantic", "causes"),  # reasoning forward
    ("semantic", "caused_by"),  # reasoning backward
    ("entity", "semantic"),  # what else is said about an entity
)
TEMPORAL_PATTERNS: tuple[Pattern, ...] = (
    ("temporal", "semantic"),  # what was going on at that time
    ("temporal", "entity"),  # who was involved at that time
)


@dataclass(slots=True)
class Push:
    """One pattern's traversal: scores so far, the mass still moving, and the mass let go."""

    frontier: dict[UUID, float]
    scores: dict[UUID, float] = field(default_factory=lambda: defaultdict(float))
    pruned: float = 0.0  # below the threshold
    dangling: float = 0.0  # pushed from a node without neighbours of the hop's type

    @property
    def total(self) -> float:
        """Every unit of seed mass is in exactly one of these: the conservation invariant."""
        return sum(self.scores.values()) + sum(self.frontier.values()) + self.pruned + self.dangling


def seed_mass(seeds: Mapping[UUID, float]) -> dict[UUID, float]:
    """Seed scores as a distribution: negative scores count as 0, and all-zero seeds share
    the mass equally."""
    if not seeds:
        return {}
    clipped = {node: max(0.0, float(score)) for node, score in seeds.items()}
    total = sum(clipped.values())
    if total <= 0.0:
        return {node: 1.0 / len(clipped) for node in clipped}
    return {node: score / total for node, score in clipped.items()}


def normalize_top(edges: Iterable[tuple[UUID, float]], top_k: int) -> list[tuple[UUID, float]]:
    """The ``top_k`` heaviest edges (ties by id), their weights scaled to sum to 1."""
    best = sorted(edges, key=lambda e: (-e[1], e[0].int))[:top_k]
    total = sum(w for _, w in best)
    if not best:
        return []
    if total <= 0.0:
        return [(node, 1.0 / len(best)) for node, _ in best]
    return [(node, w / total) for node, w in best]


def push_hop(state: Push, edge_type: str, adjacency: Adjacency, *, alpha: float, threshold: float) -> None:
    """One hop: every frontier node at or above the threshold keeps ``alpha`` of its mass as
    score and pushes the rest over its ``edge_type`` neighbours."""
    moved: dict[UUID, float] = defaultdict(float)
    for node, mass in state.frontier.items():
        if mass < threshold:
            state.pruned += mass
            continue
        state.scores[node] += alpha * mass
        neighbours = adjacency.get((node, edge_type), ())
        if not neighbours:
            state.dangling += (1.0 - alpha) * mass
            continue
        for dst, weight in neighbours:
            moved[dst] += (1.0 - alpha) * mass * weight
    state.frontier = dict(moved)


def finish(state: Push, *, threshold: float) -> None:
    """After the last hop the mass still at a node (at or above the threshold) is its score."""
    for node, mass in state.frontier.items():
        if mass >= threshold:
            state.scores[node] += mass
        else:
            state.pruned += mass
    state.frontier = {}


def frontier_requests(state: Push, edge_type: str, threshold: float) -> list[tuple[UUID, str]]:
    """The (node, edge type) pairs whose neighbours the next hop reads."""
    return [(node, edge_type) for node, mass in state.frontier.items() if mass >= threshold]


def forward_push(
    seeds: Mapping[UUID, float], pattern: Pattern, adjacency: Adjacency, *, alpha: float, threshold: float
) -> Push:
    """A whole traversal over an adjacency already in memory."""
    state = Push(seed_mass(seeds))
    for edge_type in pattern:
        push_hop(state, edge_type, adjacency, alpha=alpha, threshold=threshold)
    finish(state, threshold=threshold)
    return state


def _ranking(scores: Mapping[UUID, float], exclude: set[UUID]) -> list[UUID]:
    kept = [(node, s) for node, s in scores.items() if s > 0.0 and node not in exclude]
    return [node for node, _ in sorted(kept, key=lambda e: (-e[1], e[0].int))]


class MpfpRetriever:
    """The graph arm by meta-path forward push (``graph_retriever: mpfp``)."""

    name = "mpfp"

    async def retrieve(self, pool: asyncpg.Pool, ctx: ArmContext) -> ArmResult:
        # The seeds are awaited before a connection is taken, so waiting holds none.
        others = ctx.others
        semantic_hits = await others.hits("semantic") if others.runs("semantic") else None
        temporal_hits = await others.hits("temporal")
        async with pool.acquire() as conn:
            return await self._traverse(conn, ctx, semantic_hits, temporal_hits)

    async def _traverse(
        self,
        conn: asyncpg.Connection,
        ctx: ArmContext,
        semantic_hits: list[ArmHit] | None,
        temporal_hits: list[ArmHit],
    ) -> ArmResult:
        cfg = ctx.cfg
        semantic = await self._semantic_seeds(conn, ctx, semantic_hits)
        temporal = {h.unit_id: h.score for h in temporal_hits[: cfg.graph_seed_count]}
        runs: dict[str, tuple[Pattern, Push]] = {}
        for start, found, patterns in (
            ("semantic", semantic, SEMANTIC_PATTERNS),
            ("temporal", temporal, TEMPORAL_PATTERNS),
        ):
            if found:
                for pattern in patterns:
                    runs[f"{start}:{'>'.join(pattern)}"] = (pattern, Push(seed_mass(found)))
        if not runs:
            return ArmResult("graph", [], note="mpfp: no seeds")
        adjacency: dict[tuple[UUID, str], list[tuple[UUID, float]]] = {}
        hops = max(len(p) for p, _ in runs.values())
        for hop in range(hops):
            wanted = {
                req
                for pattern, state in runs.values()
                if hop < len(pattern)
                for req in frontier_requests(state, pattern[hop], cfg.mpfp_threshold)
                if req not in adjacency
            }
            await self._load(conn, ctx, sorted(wanted, key=lambda r: (r[0].int, r[1])), adjacency)
            for pattern, state in runs.values():
                if hop < len(pattern):
                    push_hop(
                        state, pattern[hop], adjacency, alpha=cfg.mpfp_alpha, threshold=cfg.mpfp_threshold
                    )
        # A pattern whose path breaks off before its last hop (no causal links in the bank, say)
        # would only rank the nodes of its first hop again: it does not vote.
        runs = {name: run for name, run in runs.items() if run[1].frontier}
        for _, state in runs.values():
            finish(state, threshold=cfg.mpfp_threshold)
        exclude = set() if cfg.mpfp_include_seeds else set(semantic) | set(temporal)
        rankings = {name: _ranking(state.scores, exclude) for name, (_, state) in runs.items()}
        fused = fuse_candidates({n: r for n, r in rankings.items() if r}, cfg.rrf_k)
        ids = [c.unit_id for c in fused[: ctx.limit * 2]]
        if ids and _filtering(ctx.filters):
            passing = await graph_sql.passing_filters(conn, ctx.bank_id, ids, ctx.filters)
            fused = [c for c in fused if c.unit_id in passing]
        hits = [
            ArmHit(c.unit_id, c.fused_score, {"patterns": dict(sorted(c.arm_ranks.items()))})
            for c in fused[: ctx.limit]
        ]
        note = f"mpfp: seeds semantic={len(semantic)} temporal={len(temporal)}, edges read={len(adjacency)}"
        return ArmResult("graph", hits, note=note)

    async def _semantic_seeds(
        self, conn: asyncpg.Connection, ctx: ArmContext, hits: list[ArmHit] | None
    ) -> dict[UUID, float]:
        n = ctx.cfg.graph_seed_count
        if hits is not None:
            return {h.unit_id: h.score for h in hits[:n]}
        if ctx.embedding is None:
            return {}
        # Without a semantic arm the seeds are the query's nearest facts, found here.
        rows = await sql.semantic_search(
            conn,
            ctx.bank_id,
            ctx.embedding,
            limit=n,
            min_similarity=ctx.cfg.semantic_threshold,
            filters=ctx.filters,
            exact=ctx.exact,
            ef_search=ctx.ef_search,
        )
        return {r["id"]: float(r["score"]) for r in rows}

    async def _load(
        self,
        conn: asyncpg.Connection,
        ctx: ArmContext,
        requests: list[tuple[UUID, str]],
        adjacency: dict[tuple[UUID, str], list[tuple[UUID, float]]],
    ) -> None:
        cfg = ctx.cfg
        rows = await graph_sql.frontier_neighbours(
            conn,
            ctx.bank_id,
            requests,
            top_k=cfg.mpfp_top_k,
            min_weight=cfg.mpfp_min_edge_weight,
            entity_max_mentions=max(cfg.mpfp_hub_min_mentions, int(ctx.bank_size * cfg.mpfp_hub_share)),
        )
        found: dict[tuple[UUID, str], list[tuple[UUID, float]]] = defaultdict(list)
        for r in rows:
            found[(r["src"], r["hop"])].append((r["dst"], float(r["weight"])))
        for req in requests:  # nodes without neighbours are remembered too
            adjacency[req] = normalize_top(found.get(req, ()), cfg.mpfp_top_k)


def _filtering(f: sql.RecallFilters) -> bool:
    return any(v is not None for v in (f.types, f.tags, f.window_start, f.window_end))
