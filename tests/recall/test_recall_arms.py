"""Each retrieval arm against a small hand-built bank, run directly on the database."""

from __future__ import annotations

import math
import uuid
from datetime import UTC, datetime

import asyncpg
import pytest

from tempr.recall_api.recall.arms import ArmContext, ArmResult, run_arm
from tempr.recall_api.recall.config import Arm, RecallConfig
from tempr.recall_api.recall.temporal import query_window
from tempr.store.recall import RecallFilters
from tests.recall.bankkit import Unit, embed, insert_entity, insert_link, insert_units

pytestmark = pytest.mark.integration

QUERY_TS = datetime(2024, 7, 15, 12, tzinfo=UTC)

DISTRACTORS = [
    "The weather in Lisbon was sunny all week.",
    "Carol bought a new bicycle for commuting.",
    "The team shipped version 2 of the billing service.",
    "Dana is learning to play the cello.",
]


def day(y: int, m: int, d: int) -> datetime:
    return datetime(y, m, d, 12, tzinfo=UTC)


async def arm(
    db: asyncpg.Pool,
    name: Arm,
    bank: str,
    query: str,
    *,
    limit: int = 100,
    cfg: RecallConfig | None = None,
    **filters: object,
) -> ArmResult:
    ctx = ArmContext(
        bank_id=bank,
        keyword_text=query,
        embedding=embed([query])[0],
        filters=RecallFilters(**filters),  # type: ignore[arg-type]
        limit=limit,
        cfg=cfg or RecallConfig(graph_retriever="bfs"),
        bank_size=await db.fetchval("SELECT count(*) FROM memory_units WHERE bank_id = $1", bank),
        window=query_window(query, QUERY_TS),
    )
    return await run_arm(db, name, ctx)


async def test_semantic_finds_a_paraphrase(db: asyncpg.Pool, bank: str) -> None:
    target = Unit("Bob specializes in machine learning and neural networks.")
    await insert_units(db, bank, [target, *(Unit(t) for t in DISTRACTORS)])
    result = await arm(db, "semantic", bank, "What is Bob's expertise in AI?")
    assert result.ids[0] == target.id
    # Past the nearest few (kept whatever their similarity), only hits above the floor.
    keep = RecallConfig().semantic_min_results
    assert all(h.score >= RecallConfig().semantic_threshold for h in result.hits[keep:])
    assert result.note == "exact"


async def test_keyword_finds_a_rare_proper_noun(db: asyncpg.Pool, bank: str) -> None:
    target = Unit("We had dinner with Zorblatt near the harbor.")
    await insert_units(db, bank, [target, *(Unit(t) for t in DISTRACTORS)])
    result = await arm(db, "keyword", bank, 'Who is "Zorblatt"?')
    assert result.ids == [target.id]


async def test_keyword_or_query_matches_any_content_word(db: asyncpg.Pool, bank: str) -> None:
    group = Unit("Caroline went to the LGBTQ support group on Tuesday.")
    other = Unit("Melanie painted a sunrise over the lake.")
    await insert_units(db, bank, [group, other, *(Unit(t) for t in DISTRACTORS)])
    result = await arm(db, "keyword", bank, "What did Caroline do at the support group?")
    assert result.ids[0] == group.id and other.id not in result.ids


async def test_keyword_matches_an_irregular_form(db: asyncpg.Pool, bank: str) -> None:
    bought = Unit("Melanie bought these figurines at the flea market.")
    others = [Unit(t) for t in DISTRACTORS]
    await insert_units(db, bank, [bought, *others])
    result = await arm(db, "keyword", bank, "What does Melanie buy?")
    bicycle = next(u for u in others if "bought" in u.text)
    assert result.ids == [bought.id, bicycle.id]  # "buy" reaches "bought"; the name ranks Melanie's first


async def test_graph_follows_shared_entity_and_causal_link(db: asyncpg.Pool, bank: str) -> None:
    seed = Unit("Alice works at Google as a software engineer.")
    by_entity = Unit("The quarterly offsite in Denver was cancelled.")
    by_cause = Unit("A burst pipe flooded the ground floor.")
    by_semantic = Unit("Tickets for the jazz festival sold out in an hour.")
    unrelated = Unit("Pelicans nest on the northern islands.")
    await insert_units(db, bank, [seed, by_entity, by_cause, by_semantic, unrelated])
    await insert_entity(db, bank, "Google", [seed.id, by_entity.id])
    await insert_link(db, bank, by_cause.id, seed.id, "causes", 0.8)
    await insert_link(db, bank, seed.id, by_semantic.id, "semantic", 0.75)
    await insert_link(db, bank, seed.id, unrelated.id, "semantic", 0.5)  # below the 0.7 floor

    sim = (await arm(db, "semantic", bank, "Where does Alice work?")).hits[0].score
    assert 0.5 <= sim <= 1.0
    result = await arm(db, "graph", bank, "Where does Alice work?")
    scores = {h.unit_id: h.score for h in result.hits}
    # Spreading activation: every signal a seed passes on is scaled by its similarity and
    # halved for the hop. The seed itself is the semantic arm's vote, not listed again.
    assert unrelated.id not in scores  # its link is below the 0.7 floor
    assert result.ids == [by_cause.id, by_semantic.id, by_entity.id]
    assert scores[by_cause.id] == pytest.approx(0.5 * 0.8 * 2.0 * sim, abs=1e-4)
    assert scores[by_semantic.id] == pytest.approx(0.5 * 0.75 * sim, abs=1e-4)
    assert scores[by_entity.id] == pytest.approx(0.5 * math.tanh(0.5) * sim, abs=1e-4)

    with_seeds = await arm(
        db,
        "graph",
        bank,
        "Where does Alice work?",
        cfg=RecallConfig(graph_retriever="bfs", graph_include_seeds=True, graph_hop_decay=1.0),
    )
    assert with_seeds.ids == [by_cause.id, seed.id, by_semantic.id, by_entity.id]
    assert {h.unit_id: h.score for h in with_seeds.hits}[seed.id] == pytest.approx(sim, abs=1e-4)


async def test_graph_respects_filters(db: asyncpg.Pool, bank: str) -> None:
    seed = Unit("Alice works at Google as a software engineer.")
    linked = Unit("The quarterly offsite in Denver was cancelled.", fact_type="experience")
    await insert_units(db, bank, [seed, linked])
    await insert_entity(db, bank, "Google", [seed.id, linked.id])
    assert (await arm(db, "graph", bank, "Where does Alice work?")).ids == [linked.id]
    assert (await arm(db, "graph", bank, "Where does Alice work?", types=["world"])).ids == []
    assert (await arm(db, "graph", bank, "Where does Alice work?", types=["experience"])).ids == []


async def test_temporal_last_spring_keeps_in_window_facts(db: asyncpg.Pool, bank: str) -> None:
    inside = [
        Unit("I started a vegetable garden.", occurred_start=day(2024, 3, 10)),
        Unit("I ran a half marathon.", mentioned_at=day(2024, 4, 20)),
        Unit("I visited my aunt in Porto.", occurred_start=day(2024, 5, 30), occurred_end=day(2024, 6, 2)),
    ]
    outside = [
        Unit("I adopted a dog.", occurred_start=day(2024, 1, 5)),
        Unit("I went skiing.", mentioned_at=day(2023, 12, 20)),
        Unit("I repainted the kitchen.", occurred_start=day(2024, 6, 20)),
        Unit("An undated thought about gardens."),
    ]
    await insert_units(db, bank, inside + outside)
    result = await arm(db, "temporal", bank, "What did I do last spring?")
    assert set(result.ids) == {u.id for u in inside}
    assert result.ids[0] == inside[0].id  # relevance-first: the garden is closest to "spring"


async def test_temporal_keeps_what_started_before_the_window_and_runs_into_it(
    db: asyncpg.Pool, bank: str
) -> None:
    # The window is read as two index ranges (facts starting inside it; intervals that started
    # before it): every fact overlapping it, from either side, and nothing else.
    inside = [
        Unit("I trained for the spring race.", occurred_start=day(2024, 2, 1), occurred_end=day(2024, 3, 20)),
        Unit(
            "I lived with my sister in Porto.", occurred_start=day(2023, 9, 1), occurred_end=day(2024, 9, 1)
        ),
        Unit("I ran the spring race.", occurred_start=day(2024, 4, 14)),
    ]
    outside = [
        Unit("I took a winter course.", occurred_start=day(2023, 11, 1), occurred_end=day(2024, 2, 20)),
        Unit("I planned a summer trip.", occurred_start=day(2024, 6, 10), occurred_end=day(2024, 7, 1)),
        # An end before its start (a bad extraction): no overlap, as before the split.
        Unit("I mixed up my spring dates.", occurred_start=day(2024, 4, 1), occurred_end=day(2024, 1, 1)),
    ]
    await insert_units(db, bank, inside + outside)
    result = await arm(db, "temporal", bank, "What did I do last spring?")
    assert set(result.ids) == {u.id for u in inside}
    assert len(result.ids) == len(inside)  # an interval is not read twice


async def test_temporal_in_june_2023(db: asyncpg.Pool, bank: str) -> None:
    june = Unit("We moved into the new flat.", occurred_start=day(2023, 6, 14))
    july = Unit("We bought a sofa.", occurred_start=day(2023, 7, 2))
    await insert_units(db, bank, [june, july])
    result = await arm(db, "temporal", bank, "What happened in June 2023?")
    assert result.ids == [june.id]


async def test_temporal_spreads_over_buckets(db: asyncpg.Pool, bank: str) -> None:
    # Many strong matches crowd early 2023; one weaker match sits in the autumn.
    early = [
        Unit(f"I played tennis at the club, session {i}.", occurred_start=day(2023, 1, 2 + i))
        for i in range(12)
    ]
    autumn = Unit("I read a book about history.", occurred_start=day(2023, 10, 15))
    await insert_units(db, bank, [*early, autumn])
    result = await arm(db, "temporal", bank, "When did I play tennis in 2023?")
    assert len(result.ids) == 13
    populated = len({h.detail["bucket"] for h in result.hits})
    assert populated == 2
    assert result.ids.index(autumn.id) < populated  # first pass takes each bucket's best


async def test_no_time_expression_means_no_temporal_candidates(db: asyncpg.Pool, bank: str) -> None:
    await insert_units(db, bank, [Unit("I ran a half marathon.", occurred_start=day(2024, 4, 20))])
    result = await arm(db, "temporal", bank, "What sports do I do?")
    assert result.ids == [] and result.note == "no time expression"


async def test_arms_apply_the_tag_filter(db: asyncpg.Pool, bank: str) -> None:
    tagged = Unit("Zorblatt likes sailing.", tags=["private"])
    await insert_units(db, bank, [tagged])
    for name in ("semantic", "keyword"):
        hit = await arm(db, name, bank, "Zorblatt sailing", tags=["private"], tags_match="all_strict")
        miss = await arm(db, name, bank, "Zorblatt sailing", tags=["work"], tags_match="any_strict")
        assert hit.ids == [tagged.id] and miss.ids == [], name


async def test_unknown_bank_returns_nothing(db: asyncpg.Pool) -> None:
    for name in ("semantic", "keyword", "graph"):
        assert (await arm(db, name, f"nobody-{uuid.uuid4().hex[:8]}", "anything at all")).ids == []


@pytest.mark.parametrize(("bank_size", "note"), [(30_000, "hnsw+exact-fallback"), (10**6, "hnsw")])
async def test_semantic_index_path_and_fallback(
    db: asyncpg.Pool, bank: str, bank_size: int, note: str
) -> None:
    target = Unit("Bob specializes in machine learning and neural networks.")
    await insert_units(db, bank, [target, *(Unit(t) for t in DISTRACTORS)])
    query = "What is Bob's expertise in AI?"
    ctx = ArmContext(
        bank_id=bank,
        keyword_text=query,
        embedding=embed([query])[0],
        filters=RecallFilters(),
        limit=100,
        cfg=RecallConfig(),
        bank_size=bank_size,
        indexed=True,  # pretend the bank has its own index (none is built: the fallback's case)
    )
    result = await run_arm(db, "semantic", ctx)
    assert result.note == note
    assert result.ids[0] == target.id
