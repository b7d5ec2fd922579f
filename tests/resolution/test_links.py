from __future__ import annotations

import random
from collections import Counter
from datetime import UTC, datetime, timedelta
from uuid import UUID

import numpy as np
import pytest

from tempr.agents.resolution.links import (
    FactPoint,
    build_links,
    causal_links,
    entity_link_weight,
    entity_links,
    semantic_links,
    temporal_links,
)
from tempr.schemas.events import MemoryLink
from tempr.schemas.ids import stable_id

T0 = datetime(2024, 5, 1, 10, 0, tzinfo=UTC)
SPEAKER = stable_id("entity", "caroline")
PARIS = stable_id("entity", "paris")
POTTERY = stable_id("entity", "pottery")


def uid(name: str) -> UUID:
    return stable_id("unit", name)


def pairs(links: list[MemoryLink]) -> dict[frozenset[UUID], float]:
    return {frozenset((lk.from_id, lk.to_id)): lk.weight for lk in links}


def p(a: str, b: str) -> frozenset[UUID]:
    return frozenset((uid(a), uid(b)))


def degrees(links: list[MemoryLink]) -> Counter[UUID]:
    return Counter(node for lk in links for node in (lk.from_id, lk.to_id))


def conversation() -> list[FactPoint]:
    """Six facts. Times: 0h, 6h, 12h, 23h, 72h, undated. Cosines are fixed by construction:
    f1·f2 = 0.8, f1·f5 = 1.0 (f5 is f1 scaled by 3), f2·f5 = 0.8, f4·f6 = 0.8, f2·f3 = 0.6,
    f3·f6 = 0.6, f2·f6 = 0.36, every other pair 0."""
    return [
        FactPoint(uid("f1"), T0, [1.0, 0.0, 0.0], {SPEAKER, PARIS},
                  [(uid("f2"), "causes", 0.9), (uid("f2"), "causes", 0.5)]),
        FactPoint(uid("f2"), T0 + timedelta(hours=6), [0.8, 0.6, 0.0], {SPEAKER}),
        FactPoint(uid("f3"), T0 + timedelta(hours=12), [0.0, 1.0, 0.0], {SPEAKER, POTTERY},
                  [(uid("f1"), "caused_by", 1.0)]),
        FactPoint(uid("f4"), T0 + timedelta(hours=23), np.array([0.0, 0.0, 2.0]),
                  {SPEAKER, POTTERY}, [(uid("f5"), "enables", 0.6)]),
        FactPoint(uid("f5"), T0 + timedelta(hours=72), [3.0, 0.0, 0.0], {SPEAKER, PARIS},
                  [(uid("f5"), "prevents", 1.0)]),
        FactPoint(uid("f6"), None, [0.0, 0.6, 0.8], {SPEAKER}),
    ]  # fmt: skip


def assert_well_formed(links: list[MemoryLink]) -> None:
    keys = [(lk.from_id, lk.to_id, lk.link_type) for lk in links]
    assert len(keys) == len(set(keys)), "duplicate link"
    assert all(lk.from_id != lk.to_id for lk in links), "self link"
    symmetric = [lk for lk in links if lk.link_type in ("temporal", "semantic", "entity")]
    assert all(lk.from_id.int < lk.to_id.int for lk in symmetric), "not canonically oriented"
    undirected = [frozenset((lk.from_id, lk.to_id)) for lk in symmetric]
    per_type = Counter(zip(undirected, [lk.link_type for lk in symmetric], strict=True))
    assert max(per_type.values(), default=1) == 1, "both directions stored"


# --------------------------------------------------------------------------- temporal


def test_temporal_links_of_the_conversation() -> None:
    links = temporal_links(conversation(), [])
    assert_well_formed(links)
    assert pairs(links) == {
        p("f1", "f2"): 0.75,  # Δ 6h
        p("f1", "f3"): 0.5,  # Δ 12h
        p("f1", "f4"): 0.3,  # Δ 23h: 1 - 23/24 = 0.042, floored to 0.3
        p("f2", "f3"): 0.75,  # Δ 6h
        p("f2", "f4"): 0.3,  # Δ 17h: 0.29 floored
        p("f3", "f4"): pytest.approx(1 - 11 / 24),  # Δ 11h
    }  # f5 is 49h from f4, f6 has no time


def test_temporal_links_only_involve_new_facts() -> None:
    facts = conversation()
    links = temporal_links(facts[3:], facts[:3])
    assert set(pairs(links)) == {p("f1", "f4"), p("f2", "f4"), p("f3", "f4")}


def test_temporal_window_is_exclusive_and_naive_times_are_utc() -> None:
    a = FactPoint(uid("a"), datetime(2024, 5, 1, 0, 0))
    b = FactPoint(uid("b"), T0.replace(hour=0) + timedelta(hours=24))
    c = FactPoint(uid("c"), T0.replace(hour=0) + timedelta(hours=18))
    assert pairs(temporal_links([a], [b, c])) == {p("a", "c"): 0.3}


def test_one_new_fact_among_30_gets_its_20_closest() -> None:
    new = FactPoint(uid("new"), T0)
    existing = [FactPoint(uid(f"e{i}"), T0 + timedelta(minutes=i)) for i in range(1, 31)]
    links = temporal_links([new], existing)
    assert set(pairs(links)) == {p("new", f"e{i}") for i in range(1, 21)}
    assert pairs(links)[p("new", "e1")] == pytest.approx(1 - 1 / (24 * 60))


def test_30_new_facts_in_one_window_have_at_most_20_links_each() -> None:
    facts = [FactPoint(uid(f"n{i}"), T0 + timedelta(minutes=10 * i)) for i in range(30)]
    links = temporal_links(facts, [])
    assert_well_formed(links)
    assert max(degrees(links).values()) == 20
    assert all(0.3 <= lk.weight <= 1.0 for lk in links)
    shuffled = facts[:]
    random.Random(7).shuffle(shuffled)
    assert temporal_links(shuffled, []) == links


# --------------------------------------------------------------------------- semantic


def test_semantic_links_of_the_conversation() -> None:
    links = semantic_links(conversation(), [])
    assert_well_formed(links)
    assert pairs(links) == {
        p("f1", "f2"): pytest.approx(0.8),
        p("f1", "f5"): pytest.approx(1.0),
        p("f2", "f5"): pytest.approx(0.8),
        p("f4", "f6"): pytest.approx(0.8),
    }
    assert len(semantic_links(conversation(), [], threshold=0.5)) == 6  # + f2-f3, f3-f6


def test_semantic_links_top_k_and_bad_embeddings() -> None:
    base = np.array([1.0, 0.0])
    near = [FactPoint(uid(f"s{i}"), embedding=base + [0.0, 0.01 * i]) for i in range(1, 9)]
    new = FactPoint(uid("q"), embedding=base)
    links = semantic_links([new], near, top_k=3)
    assert set(pairs(links)) == {p("q", "s1"), p("q", "s2"), p("q", "s3")}
    zero = FactPoint(uid("z"), embedding=[0.0, 0.0])
    missing = FactPoint(uid("m"))
    assert semantic_links([zero, missing], near) == []
    with pytest.raises(ValueError, match="dimension"):
        semantic_links([FactPoint(uid("w"), embedding=[1.0, 0.0, 0.0])], near)


# --------------------------------------------------------------------------- entity


def test_entity_links_of_the_conversation() -> None:
    links = entity_links(conversation(), [])
    assert_well_formed(links)
    got = pairs(links)
    assert len(got) == 15  # the speaker is in all six facts: every pair
    assert got[p("f1", "f5")] == 0.875  # speaker + Paris
    assert got[p("f3", "f4")] == 0.875  # speaker + pottery
    assert Counter(got.values()) == {0.75: 13, 0.875: 2}
    assert entity_link_weight(1) == 0.75 and entity_link_weight(3) == 0.9375


def test_entity_fan_out_is_capped_to_the_closest_in_time() -> None:
    new = FactPoint(uid("new"), T0, entity_ids={SPEAKER})
    existing = [FactPoint(uid(f"e{i}"), T0 - timedelta(days=i), entity_ids={SPEAKER}) for i in range(1, 51)]
    links = entity_links([new], existing, max_per_entity=5)
    assert set(pairs(links)) == {p("new", f"e{i}") for i in range(1, 6)}


def test_entity_fan_out_cap_holds_for_a_batch_of_new_facts() -> None:
    facts = [FactPoint(uid(f"n{i}"), T0 + timedelta(hours=i), entity_ids={SPEAKER}) for i in range(30)]
    links = entity_links(facts, [], max_per_entity=5)
    assert_well_formed(links)
    assert max(degrees(links).values()) == 5


def test_entity_links_for_an_undated_fact_prefer_recent_facts() -> None:
    new = FactPoint(uid("new"), None, entity_ids={PARIS})
    existing = [FactPoint(uid(f"e{i}"), T0 + timedelta(days=i), entity_ids={PARIS}) for i in range(5)]
    existing.append(FactPoint(uid("undated"), None, entity_ids={PARIS}))
    assert set(pairs(entity_links([new], existing, max_per_entity=2))) == {
        p("new", "e4"),
        p("new", "e3"),
    }
    assert len(entity_links([new], existing, max_per_entity=10)) == 6


# --------------------------------------------------------------------------- causal


def test_causal_links_are_directed_and_deduplicated() -> None:
    links = causal_links(conversation())
    assert_well_formed(links)
    got = {(lk.from_id, lk.to_id, lk.link_type): lk.weight for lk in links}
    assert got == {
        (uid("f1"), uid("f2"), "causes"): 0.9,  # duplicate edge with 0.5 dropped
        (uid("f3"), uid("f1"), "caused_by"): 1.0,
        (uid("f4"), uid("f5"), "enables"): 0.6,
    }  # f5 "prevents" itself: dropped


def test_unknown_causal_relation_is_rejected() -> None:
    with pytest.raises(ValueError, match="relation"):
        causal_links([FactPoint(uid("a"), causal=[(uid("b"), "correlates", 1.0)])])


# --------------------------------------------------------------------------- combined


def test_build_links_combines_all_types() -> None:
    links = build_links(conversation(), [])
    assert_well_formed(links)
    assert Counter(lk.link_type for lk in links) == {
        "temporal": 6,
        "semantic": 4,
        "entity": 15,
        "causes": 1,
        "caused_by": 1,
        "enables": 1,
    }
    assert all(0.0 <= lk.weight <= 1.0 for lk in links)
    assert build_links(list(reversed(conversation())), []) == links


def test_build_links_is_stable_when_a_fact_moves_from_new_to_existing() -> None:
    """Replaying f4 once its neighbours are stored yields rows already written, not mirrors."""
    facts = conversation()
    everything = {(lk.from_id, lk.to_id, lk.link_type) for lk in build_links(facts, [])}
    replay = build_links([facts[3]], facts[:3] + facts[4:])
    assert replay and {(lk.from_id, lk.to_id, lk.link_type) for lk in replay} <= everything


def test_fact_given_as_new_and_existing_counts_once() -> None:
    facts = conversation()
    assert build_links(facts, facts) == build_links(facts, [])


def _random_points(rng: random.Random, n: int, prefix: str) -> list[FactPoint]:
    """Facts over three days, vectors from a few shared directions (so many cosines pass 0.7),
    entities from a small set; some undated, some without a usable embedding."""
    bases = [np.array([rng.gauss(0, 1) for _ in range(16)]) for _ in range(4)]
    entities = [stable_id("entity", f"e{i}") for i in range(6)]
    points = []
    for i in range(n):
        vector: list[float] | None = list(bases[i % 4] + np.array([rng.gauss(0, 0.4) for _ in range(16)]))
        if i % 17 == 5:
            vector = None
        elif i % 19 == 7:
            vector = [0.0] * 16
        when = None if i % 11 == 3 else T0 + timedelta(minutes=rng.randrange(0, 72 * 60))
        points.append(FactPoint(uid(f"{prefix}{i}"), when, vector, set(rng.sample(entities, 2))))
    return points


def _fresh(points: list[FactPoint]) -> list[FactPoint]:
    return [FactPoint(p.unit_id, p.when, p.embedding, set(p.entity_ids), list(p.causal)) for p in points]


def test_points_reused_across_builds_link_as_fresh_ones() -> None:
    """The resolver keeps recent facts and passes the same points to many builds; their
    remembered normalized vectors must give exactly the links of points seen for the first time."""
    rng = random.Random(7)
    recent = _random_points(rng, 120, "old")
    for round_ in range(4):
        new = _random_points(rng, 12, f"new{round_}-")
        warm = build_links(new, recent)
        cold = build_links(_fresh(new), _fresh(recent))
        assert warm == cold
        assert [lk.model_dump() for lk in warm] == [lk.model_dump() for lk in cold]
        assert {lk.link_type for lk in warm} == {"temporal", "semantic", "entity"}
        recent.extend(new)


def test_built_links_are_valid_links() -> None:
    """Links are built without re-validation: each must equal its validated form, dump the
    same JSON, and hold a weight inside [0, 1]."""
    rng = random.Random(11)
    new = _random_points(rng, 20, "n")
    new[0].causal.append((new[1].unit_id, "causes", 1.7))
    links = build_links(new, _random_points(rng, 60, "o"))
    assert any(lk.link_type == "causes" for lk in links)
    for link in links:
        checked = MemoryLink.model_validate(link.model_dump())
        assert checked == link
        assert checked.model_dump_json() == link.model_dump_json()
        assert 0.0 <= link.weight <= 1.0
