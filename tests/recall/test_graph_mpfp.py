"""Meta-path forward push on small hand-made graphs: where the mass goes, and where it stops."""

from __future__ import annotations

from uuid import UUID

import pytest

from tempr.recall_api.recall.graph_mpfp import (
    SEMANTIC_PATTERNS,
    TEMPORAL_PATTERNS,
    Push,
    finish,
    forward_push,
    normalize_top,
    push_hop,
    seed_mass,
)

A, B, C, D, E, F = (UUID(int=i) for i in range(1, 7))


def test_patterns_are_the_reference_meta_paths() -> None:
    assert SEMANTIC_PATTERNS == (
        ("semantic", "semantic"),
        ("entity", "temporal"),
        ("semantic", "causes"),
        ("semantic", "caused_by"),
        ("entity", "semantic"),
    )
    assert TEMPORAL_PATTERNS == (("temporal", "semantic"), ("temporal", "entity"))


def test_seed_mass_is_a_distribution() -> None:
    assert seed_mass({A: 0.6, B: 0.2}) == pytest.approx({A: 0.75, B: 0.25})
    assert seed_mass({A: 0.0, B: -1.0}) == {A: 0.5, B: 0.5}  # nothing to tell apart: equal
    assert seed_mass({A: 0.5, B: -0.5}) == {A: 1.0, B: 0.0}
    assert seed_mass({}) == {}


def test_normalize_top_keeps_the_heaviest_and_sums_to_one() -> None:
    edges = [(A, 0.2), (B, 0.9), (C, 0.5), (D, 0.4)]
    top = normalize_top(edges, 2)
    assert [n for n, _ in top] == [B, C]
    assert [w for _, w in top] == pytest.approx([0.9 / 1.4, 0.5 / 1.4])
    assert normalize_top([], 20) == []
    assert normalize_top([(A, 0.0), (B, 0.0)], 20) == [(A, 0.5), (B, 0.5)]


def test_one_hop_keeps_alpha_and_pushes_the_rest_by_normalized_weight() -> None:
    adjacency = {(A, "semantic"): normalize_top([(B, 0.9), (C, 0.3)], 20)}
    assert sum(w for _, w in adjacency[(A, "semantic")]) == pytest.approx(1.0)
    state = Push({A: 1.0})
    push_hop(state, "semantic", adjacency, alpha=0.15, threshold=1e-6)
    assert state.scores == pytest.approx({A: 0.15})
    assert state.frontier == pytest.approx({B: 0.85 * 0.75, C: 0.85 * 0.25})
    assert state.total == pytest.approx(1.0)


def test_hops_follow_their_own_edge_type_only() -> None:
    # A-B is semantic, A-C temporal: the first hop of semantic>temporal reaches B only, and
    # the second leaves B over its temporal edge to D, not over its semantic edge to E.
    adjacency = {
        (A, "semantic"): [(B, 1.0)],
        (A, "temporal"): [(C, 1.0)],
        (B, "temporal"): [(D, 1.0)],
        (B, "semantic"): [(E, 1.0)],
    }
    state = forward_push({A: 1.0}, ("semantic", "temporal"), adjacency, alpha=0.15, threshold=1e-6)
    assert set(state.scores) == {A, B, D}
    assert state.scores[D] == pytest.approx(0.85 * 0.85)
    assert state.scores[B] == pytest.approx(0.85 * 0.15)


def test_mass_is_conserved_across_scores_pruning_and_dead_ends() -> None:
    adjacency = {
        (A, "semantic"): normalize_top([(B, 0.8), (C, 0.8), (D, 1e-9)], 20),
        (B, "entity"): normalize_top([(E, 1.0), (F, 0.5)], 20),
        # C has no entity neighbours: its pushed mass is a dead end.
    }
    state = forward_push({A: 0.7, F: 0.3}, ("semantic", "entity"), adjacency, alpha=0.15, threshold=1e-6)
    assert state.total == pytest.approx(1.0)
    assert state.dangling > 0.0  # F's push at hop 1, C's at hop 2
    assert state.pruned > 0.0  # D's sliver is below the threshold
    assert D not in state.scores


def test_pruning_drops_mass_below_the_threshold_before_it_spreads() -> None:
    adjacency = {(A, "semantic"): [(B, 1.0)], (B, "semantic"): [(C, 1.0)]}
    low = Push({A: 1e-7})
    push_hop(low, "semantic", adjacency, alpha=0.15, threshold=1e-6)
    assert low.scores == {} and low.frontier == {} and low.pruned == pytest.approx(1e-7)
    kept = Push({A: 1e-5})
    push_hop(kept, "semantic", adjacency, alpha=0.15, threshold=1e-6)
    assert set(kept.frontier) == {B}


def test_finish_scores_the_remaining_mass() -> None:
    state = Push({B: 0.5, C: 1e-8})
    finish(state, threshold=1e-6)
    assert dict(state.scores) == pytest.approx({B: 0.5})
    assert state.pruned == pytest.approx(1e-8)
    assert state.frontier == {}


def test_work_is_bounded_by_fan_out_not_by_graph_size() -> None:
    # A star of 5,000 neighbours: only the top 20 receive mass.
    hub = [(UUID(int=100 + i), 1.0 - i * 1e-4) for i in range(5000)]
    adjacency = {(A, "semantic"): normalize_top(hub, 20)}
    state = forward_push({A: 1.0}, ("semantic",), adjacency, alpha=0.15, threshold=1e-6)
    assert len(state.scores) == 21
    assert max(n.int for n in state.scores if n != A) == 119
    assert state.total == pytest.approx(1.0)
