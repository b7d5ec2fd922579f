from __future__ import annotations

import math
import random
from uuid import UUID, uuid4

import pytest

from tempr.recall_api.recall.fusion import (
    Candidate,
    arm_composition,
    fuse_candidates,
    prefilter,
    reciprocal_rank_fusion,
)


def ids(n: int) -> list[UUID]:
    return [UUID(int=i + 1) for i in range(n)]


def test_consensus_example_from_the_spec() -> None:
    both, sem_only = uuid4(), uuid4()
    filler = [uuid4() for _ in range(3)]
    fused = reciprocal_rank_fusion(
        {"semantic": [both], "keyword": [*filler, sem_only, both]},
    )
    scores = dict(fused)
    assert scores[both] == pytest.approx(1 / 61 + 1 / 65)
    assert round(scores[both], 4) == 0.0318
    assert fused[0][0] == both


def test_single_arm_top_hit_scores_one_over_61() -> None:
    (a,) = ids(1)
    assert reciprocal_rank_fusion({"semantic": [a]}) == [(a, pytest.approx(1 / 61))]


def test_custom_k() -> None:
    a, b = ids(2)
    assert dict(reciprocal_rank_fusion({"keyword": [a, b]}, k=0)) == {a: 1.0, b: 0.5}


def test_output_sorted_descending_and_covers_union() -> None:
    a, b, c, d = ids(4)
    fused = reciprocal_rank_fusion({"semantic": [a, b, c], "graph": [d, c]})
    assert {u for u, _ in fused} == {a, b, c, d}
    scores = [s for _, s in fused]
    assert scores == sorted(scores, reverse=True)
    assert fused[0][0] == c  # the only unit two arms agree on


def test_boost_divides_the_rank() -> None:
    a, b, c, d = ids(4)
    fused = dict(
        reciprocal_rank_fusion({"graph": [a, b, c, d]}, arm_boosts={"graph": 2.0}),
    )
    assert fused[d] == pytest.approx(1 / (60 + 4 / 2))
    assert fused[a] == pytest.approx(1 / (60 + 0.5))


def test_boost_lifts_a_deep_hit_past_an_unboosted_one() -> None:
    a, b = ids(2)
    deep = [UUID(int=100 + i) for i in range(8)]
    lists = {"semantic": [*deep[:4], a], "graph": [*deep[4:8], b]}  # both rank 5
    plain = dict(reciprocal_rank_fusion(lists))
    assert plain[a] == plain[b]
    boosted = dict(reciprocal_rank_fusion(lists, arm_boosts={"graph": 2.5}))
    assert boosted[b] == pytest.approx(1 / 62)
    assert boosted[b] > boosted[a]


def test_boost_below_one_demotes() -> None:
    (a,) = ids(1)
    assert dict(reciprocal_rank_fusion({"temporal": [a]}, arm_boosts={"temporal": 0.5}))[a] == pytest.approx(
        1 / 62
    )


def test_boost_for_an_absent_arm_changes_nothing() -> None:
    a, b = ids(2)
    lists = {"semantic": [a, b]}
    assert reciprocal_rank_fusion(lists, arm_boosts={"graph": 4.0}) == reciprocal_rank_fusion(lists)


@pytest.mark.parametrize("bad", [0.0, -1.0, float("inf"), float("nan")])
def test_invalid_boost_rejected(bad: float) -> None:
    with pytest.raises(ValueError):
        reciprocal_rank_fusion({"semantic": ids(1)}, arm_boosts={"semantic": bad})


def test_negative_k_rejected() -> None:
    with pytest.raises(ValueError):
        reciprocal_rank_fusion({"semantic": ids(1)}, k=-1)


def test_exact_ties_broken_by_uuid() -> None:
    low, high = UUID(int=1), UUID(int=2)
    fused = reciprocal_rank_fusion({"semantic": [high], "keyword": [low]})
    assert [u for u, _ in fused] == [low, high]
    assert fused[0][1] == fused[1][1]


def test_ties_prefer_the_strongest_single_placement() -> None:
    # With k=0, rank 2 in two arms (1/2 + 1/2) ties rank 1 in one arm (1/1) exactly.
    spread, single = UUID(int=1), UUID(int=2)
    pad = UUID(int=99)
    lists = {"semantic": [pad, spread], "keyword": [pad, spread], "graph": [single]}
    fused = reciprocal_rank_fusion(lists, k=0)
    scores = dict(fused)
    assert scores[spread] == scores[single] == 1.0
    order = [u for u, _ in fused]
    assert order.index(single) < order.index(spread)  # despite the larger uuid


def test_tie_order_independent_of_arm_order() -> None:
    units = [uuid4() for _ in range(30)]
    lists = {
        "semantic": units[:20],
        "keyword": list(reversed(units[5:25])),
        "graph": units[10:],
        "temporal": units[::3],
    }
    reference = reciprocal_rank_fusion(lists)
    rng = random.Random(7)
    for _ in range(5):
        arms = list(lists)
        rng.shuffle(arms)
        assert reciprocal_rank_fusion({a: lists[a] for a in arms}) == reference


def test_duplicate_within_an_arm_counts_once_at_best_rank() -> None:
    a, b = ids(2)
    assert dict(reciprocal_rank_fusion({"keyword": [a, b, a]}))[a] == pytest.approx(1 / 61)


def test_empty_inputs() -> None:
    assert reciprocal_rank_fusion({}) == []
    assert reciprocal_rank_fusion({"semantic": [], "keyword": []}) == []


def test_candidates_record_raw_ranks() -> None:
    a, b = ids(2)
    cands = fuse_candidates({"semantic": [b, a], "graph": [a]}, arm_boosts={"graph": 3.0})
    by_id = {c.unit_id: c for c in cands}
    assert by_id[a].arm_ranks == {"semantic": 2, "graph": 1}
    assert by_id[a].arms == ("graph", "semantic")
    assert by_id[b].rerank_score is None and by_id[b].final_score is None


def test_prefilter_caps_in_order() -> None:
    fused = reciprocal_rank_fusion({"semantic": ids(500)})
    kept = prefilter(fused, 300)
    assert kept == fused[:300]
    assert prefilter(fused[:10], 300) == fused[:10]
    assert prefilter(fused, 0) == []


def test_prefilter_rejects_negative_cap() -> None:
    with pytest.raises(ValueError):
        prefilter([], -1)


def test_boost_before_cap_keeps_favoured_arm_without_evicting_top_hits() -> None:
    sem = [UUID(int=1000 + i) for i in range(400)]
    graph = [UUID(int=5000 + i) for i in range(400)]
    lists = {"semantic": sem, "graph": graph}
    plain = {c.unit_id: c for c in prefilter(fuse_candidates(lists), 300)}
    boosted = {c.unit_id: c for c in prefilter(fuse_candidates(lists, arm_boosts={"graph": 2}), 300)}
    assert arm_composition(plain.values()) == {"graph": 150, "semantic": 150}
    assert arm_composition(boosted.values())["graph"] == 200
    assert all(u in boosted for u in sem[:10])


def test_arm_composition_counts_every_contributing_arm() -> None:
    a, b = ids(2)
    cands = [Candidate(a, {"semantic": 1, "keyword": 4}), Candidate(b, {"keyword": 1})]
    assert arm_composition(cands) == {"keyword": 2, "semantic": 1}


def _fused_by_definition(
    lists: dict[str, list[UUID]], k: float, boosts: dict[str, float]
) -> list[tuple[UUID, float, dict[str, int]]]:
    """RRF as the spec states it, written plainly: each arm's first position of a unit, the
    exactly rounded sum of 1 / (k + rank / boost), ties to the best boosted rank, then the
    lower UUID."""
    ranks: dict[UUID, dict[str, int]] = {}
    for arm, listed in lists.items():
        for position, unit in enumerate(listed, start=1):
            ranks.setdefault(unit, {}).setdefault(arm, position)

    def effective(unit: UUID) -> list[float]:
        return [r / boosts.get(arm, 1.0) for arm, r in ranks[unit].items()]

    score = {u: math.fsum(1.0 / (k + e) for e in effective(u)) for u in ranks}
    order = sorted(ranks, key=lambda u: (-score[u], min(effective(u)), u.int))
    return [(u, score[u], ranks[u]) for u in order]


@pytest.mark.parametrize("seed", range(40))
def test_fusion_matches_the_definition_bit_for_bit(seed: int) -> None:
    """Random arms with overlaps, repeats within an arm, exact ties and boosts: the same
    order, the same raw ranks and bit-identical scores as the plain definition."""
    rng = random.Random(seed)
    pool = [UUID(int=rng.getrandbits(128)) for _ in range(rng.randint(1, 80))]
    arms = rng.sample(["semantic", "keyword", "graph", "temporal"], rng.randint(1, 4))
    lists = {arm: [rng.choice(pool) for _ in range(rng.randint(0, 60))] for arm in arms}
    boosts = {arm: rng.choice([0.5, 1.0, 1.5, 2.0, 3.0]) for arm in arms if rng.random() < 0.5}
    k = rng.choice([0.0, 1.0, 60.0])
    got = fuse_candidates(lists, k, boosts)
    assert [(c.unit_id, c.fused_score, c.arm_ranks) for c in got] == _fused_by_definition(lists, k, boosts)
