"""The read side at scale: a bank's own vector index, the bounded keyword arm, the counters."""

from __future__ import annotations

import uuid

import asyncpg
import numpy as np
import pytest

from tempr.recall_api.index_maintenance import maintain_once
from tempr.recall_api.recall.arms import ArmContext, run_arm
from tempr.recall_api.recall.arms.keyword import keyword_or_query
from tempr.recall_api.recall.config import RecallConfig
from tempr.store import keyword_stats, vector_indexes
from tempr.store import recall as sql
from tempr.store.bank_stats import bank_stats
from tempr.streams.runtime import Supervisor
from tests.recall.bankkit import Unit, embed, insert_link, insert_units

pytestmark = pytest.mark.integration

TOPICS = ["sailing", "pottery", "chess", "baking bread", "hiking", "the violin", "astronomy", "gardening"]
PEOPLE = ["Ana", "Bruno", "Chen", "Dara", "Emeka", "Farah"]


def _facts(n: int) -> list[Unit]:
    return [
        Unit(f"{PEOPLE[i % len(PEOPLE)]} talked about {TOPICS[i % len(TOPICS)]} on day {i}.")
        for i in range(n)
    ]


async def _index(db: asyncpg.Pool, bank: str, facts: int) -> None:
    async with db.acquire() as conn:
        await vector_indexes.build_bank_index(conn, bank, facts)


async def test_a_bank_with_its_own_index_is_searched_through_it_and_finds_the_exact_top(
    db: asyncpg.Pool, bank: str
) -> None:
    units = _facts(80)
    await insert_units(db, bank, units)
    await _index(db, bank, len(units))
    shape = await sql.bank_shape(db, bank, min_share=0.25, min_mentions=3)
    assert shape.indexed and shape.size == 80

    query = "Who plays chess?"
    vector = embed([query])[0]
    async with db.acquire() as conn, conn.transaction():
        # With sorting ruled out only an index that orders by distance can serve the query:
        # the plan names the bank's index, though bank_id is a parameter (custom plans).
        await conn.execute("SET LOCAL enable_sort = off")
        plan = await conn.fetch(
            "EXPLAIN SELECT id FROM memory_units u WHERE u.bank_id = $1 AND u.embedding IS NOT NULL "
            "ORDER BY u.embedding <=> $2 LIMIT 10",
            bank,
            vector,
        )
    assert vector_indexes.bank_index_name(bank) in "\n".join(r[0] for r in plan)
    # The arm's own statement: its index path orders by the bank's index, and its exact path
    # (the distance computed once, behind a fence) never does.
    for exact_scan in (False, True):
        async with db.acquire() as conn, conn.transaction():
            await conn.execute("SET LOCAL enable_sort = off")
            plan = await conn.fetch(f"EXPLAIN {sql.semantic_sql(exact_scan)}", bank, vector, 10, -1.0, 0)
        uses_index = vector_indexes.bank_index_name(bank) in "\n".join(r[0] for r in plan)
        assert uses_index is not exact_scan

    ctx = ArmContext(
        bank_id=bank,
        keyword_text=query,
        embedding=vector,
        filters=sql.RecallFilters(),
        limit=20,
        cfg=RecallConfig(semantic_threshold=-1.0),
        bank_size=shape.size,
        indexed=True,
    )
    through_index = await run_arm(db, "semantic", ctx)
    assert through_index.note == "hnsw"
    async with db.acquire() as conn:
        exact = await sql.semantic_search(
            conn,
            bank,
            vector,
            limit=10,
            min_similarity=-1.0,
            filters=sql.RecallFilters(),
            exact=True,
            ef_search=40,
        )
    assert through_index.ids[:10] == [r["id"] for r in exact]
    chess = {u.id for u in units if "chess" in u.text}
    assert through_index.ids[0] in chess


async def test_maintenance_indexes_big_banks_and_drops_the_index_of_one_that_shrank(
    db: asyncpg.Pool, bank: str
) -> None:
    await insert_units(db, bank, _facts(30))
    async with db.acquire() as conn:
        built = await vector_indexes.maintain(conn, min_facts=30)
        assert any(c.bank_id == bank and c.action == "built" for c in built)
        assert await conn.fetchval(
            "SELECT indisvalid FROM pg_index WHERE indexrelid = $1::regclass",
            vector_indexes.bank_index_name(bank),
        )
        await conn.execute("DELETE FROM memory_units WHERE bank_id = $1", bank)
        dropped = await vector_indexes.maintain(conn, min_facts=30)
        assert any(c.bank_id == bank and c.action == "dropped" for c in dropped)
        assert await conn.fetchval("SELECT to_regclass($1)", vector_indexes.bank_index_name(bank)) is None
    assert not (await sql.bank_shape(db, bank, min_share=0.25, min_mentions=3)).indexed


async def test_the_maintenance_pass_builds_the_denser_graph_with_its_own_build_memory(
    stack: Supervisor, db: asyncpg.Pool, bank: str
) -> None:
    # The API's pass (its own connection, the build memory set on it), not just `maintain`.
    assert stack.settings.database_url
    await insert_units(db, bank, _facts(30))
    changes = await maintain_once(stack.settings.database_url, 30, build_memory_mb=96)
    assert any(bank in change and change.startswith("built the vector index") for change in changes)
    name = vector_indexes.bank_index_name(bank)
    async with db.acquire() as conn:
        options = await conn.fetchval("SELECT reloptions FROM pg_class WHERE relname = $1", name)
        assert sorted(options) == ["ef_construction=256", "m=32"]
        # The build's memory stayed with the pass's connection.
        assert await conn.fetchval("SHOW maintenance_work_mem") != "96MB"
    assert (await sql.bank_shape(db, bank, min_share=0.25, min_mentions=3)).indexed
    async with db.acquire() as conn:
        await vector_indexes.drop_bank_index(conn, bank)


async def test_bounded_keyword_search_scores_like_the_unbounded_one_when_nothing_is_cut(
    db: asyncpg.Pool, bank: str
) -> None:
    await insert_units(db, bank, [*_facts(48), Unit("Dara bought a telescope for astronomy at night.")])
    async with db.acquire() as conn:
        await keyword_stats.refresh_bank(conn, bank)
        text = keyword_or_query("Which of them bought a telescope for astronomy or chess?")
        full = await sql.keyword_search(conn, bank, text, limit=20, filters=sql.RecallFilters(), bank_size=49)
        plan = sql.keyword_plan(await keyword_stats.query_lexemes(conn, bank, text), max_candidates=10_000)
        assert plan.complete
        bounded = await sql.bounded_keyword_search(
            conn, bank, plan, limit=20, max_candidates=10_000, filters=sql.RecallFilters(), bank_size=49
        )
    assert [r["id"] for r in bounded] == [r["id"] for r in full]
    assert np.allclose([r["score"] for r in bounded], [r["score"] for r in full])


async def test_keyword_coverage_says_how_much_of_the_question_a_match_covers(
    db: asyncpg.Pool, bank: str
) -> None:
    """The relevance term without a cross-encoder: a fact matching one word of the question
    is the best keyword match on a small bank, yet covers little of it."""
    await insert_units(
        db,
        bank,
        [
            Unit("Ingrid's husky Luna sleeps most of the day."),
            Unit("Ingrid moved to Tromso for a research post at the polar institute."),
            Unit("Ingrid plays the cello in an amateur orchestra."),
        ],
    )
    question = "Which polar institute does she work at these days?"

    async def coverages(cfg: RecallConfig) -> dict[str, float]:
        result = await run_arm(
            db, "keyword", ArmContext(bank, question, None, sql.RecallFilters(), 10, cfg, 3)
        )
        texts = dict(await db.fetch("SELECT id, text FROM memory_units WHERE bank_id = $1", bank))
        return {texts[h.unit_id]: h.detail["coverage"] for h in result.hits}

    def day_and_institute(by_text: dict[str, float]) -> tuple[float, float]:
        assert not any("cello" in t for t in by_text)
        return (
            next(c for t, c in by_text.items() if "day" in t),
            next(c for t, c in by_text.items() if "institute" in t),
        )

    # Plain BM25 (no general-English prior): the share of the question's idf a fact matches.
    day, institute = day_and_institute(await coverages(RecallConfig(keyword_prior_facts=0)))
    assert 0.0 < day < 0.35 < institute <= 1.0
    # With the prior, "day" (common in any English) covers less still against "polar institute".
    day_prior, institute_prior = day_and_institute(await coverages(RecallConfig()))
    assert 0.0 < day_prior < day and day_prior / institute_prior < day / institute


async def test_bounded_keyword_arm_scores_the_rare_terms_facts_first(db: asyncpg.Pool, bank: str) -> None:
    telescope = Unit("Dara bought a telescope for astronomy at night.")
    await insert_units(db, bank, [*_facts(48), telescope])
    async with db.acquire() as conn:
        await keyword_stats.refresh_bank(conn, bank)
    query = "Who talked about the telescope?"
    ctx = ArmContext(
        bank_id=bank,
        keyword_text=query,
        embedding=None,
        filters=sql.RecallFilters(),
        limit=10,
        # "talked" (48 facts) is cut, "telescope" is not; the cut before MaxScore
        cfg=RecallConfig(keyword_max_candidates=5, keyword_maxscore=False),
        bank_size=49,
        keyword_stats=True,
    )
    result = await run_arm(db, "keyword", ctx)
    assert result.ids == [telescope.id]
    assert result.note is not None and "rarest 1/2 terms" in result.note


def test_keyword_plan_takes_the_rarest_terms_up_to_the_cap() -> None:
    plan = sql.keyword_plan({"said": 900, "telescop": 3, "night": 40, "bought": 60}, max_candidates=100)
    assert plan.essential == ("telescop", "night")  # 3 + 40 facts; with "bought" 103 > 100
    assert not plan.complete
    # The rarest term is always kept, even alone over the cap.
    assert sql.keyword_plan({"said": 900}, max_candidates=10).essential == ("said",)


def test_tsquery_of_quotes_lexemes_as_they_are() -> None:
    assert sql.tsquery_of(["o'neil", "back\\slash", "plain"]) == "'o''neil' | 'back\\\\slash' | 'plain'"


async def test_stats_counters_follow_inserts_upserts_and_deletes(db: asyncpg.Pool, bank: str) -> None:
    a, b, c = (
        Unit(f"Fact {name} about {bank}.", fact_type=t)
        for name, t in (("a", "world"), ("b", "world"), ("c", "experience"))
    )
    await insert_units(db, bank, [a, b, c])
    await insert_link(db, bank, a.id, b.id, "semantic", 0.8)
    await insert_link(db, bank, b.id, c.id, "temporal", 0.5)
    await db.execute(
        """INSERT INTO memory_links (from_id, to_id, link_type, weight, bank_id)
           SELECT from_id, to_id, link_type, 0.9, bank_id FROM memory_links WHERE bank_id = $1
           ON CONFLICT (from_id, to_id, link_type) DO UPDATE SET weight = excluded.weight""",
        bank,
    )  # a redelivery: the same links again
    stats = await bank_stats(db, bank)
    assert stats["facts_by_type"] == {"experience": 1, "world": 2} and stats["facts"] == 3
    assert stats["links_by_type"] == {"semantic": 1, "temporal": 1}

    await db.execute("UPDATE memory_units SET fact_type = 'opinion' WHERE id = $1", b.id)
    await db.execute("DELETE FROM memory_units WHERE id = $1", a.id)  # its link cascades
    stats = await bank_stats(db, bank)
    assert stats["facts_by_type"] == {"experience": 1, "opinion": 1}
    assert stats["links_by_type"] == {"temporal": 1}
    truth = await db.fetch(
        "SELECT link_type, count(*) AS n FROM memory_links WHERE bank_id = $1 GROUP BY 1", bank
    )
    assert {r["link_type"]: r["n"] for r in truth} == stats["links_by_type"]


async def test_an_unknown_bank_has_no_shape(db: asyncpg.Pool) -> None:
    shape = await sql.bank_shape(db, f"nobody-{uuid.uuid4().hex[:8]}", min_share=0.25, min_mentions=3)
    assert (shape.size, shape.indexed, shape.keyword_stats) == (0, False, False)


async def test_hydrated_rows_carry_their_embeddings_only_when_asked_and_the_bank_s_graph_choice(
    db: asyncpg.Pool, bank: str
) -> None:
    units = _facts(6)
    ids = await insert_units(db, bank, units)
    await db.execute(
        'INSERT INTO banks (id, config) VALUES ($1, \'{"graph_retriever": "bfs"}\') '
        "ON CONFLICT (id) DO UPDATE SET config = excluded.config",
        bank,
    )
    vector = embed(["Who bakes bread?"])[0]
    async with db.acquire() as conn:
        plain = await sql.fetch_units(conn, bank, ids, vector)
        with_vectors = await sql.fetch_units(conn, bank, ids, vector, with_embeddings=True)
    assert "embedding" not in plain[0].keys()  # noqa: SIM118 (a Record's `in` looks at values)
    stored = dict(zip(ids, embed([u.text for u in units]), strict=True))
    for row in with_vectors:
        assert np.allclose(sql.vector_of(row["embedding"]), stored[row["id"]], atol=1e-6)
        assert row["cosine"] == pytest.approx(float(stored[row["id"]] @ vector), abs=1e-5)
    shape = await sql.bank_shape(db, bank, min_share=0.25, min_mentions=3)
    assert (shape.size, shape.graph_retriever) == (6, "bfs")


async def test_a_fact_keeps_its_embedding_in_its_row(db: asyncpg.Pool, bank: str) -> None:
    # A fact of a few dozen words with its 1,540-byte vector inline is over 2 kB, so at most
    # three rows share an 8 kB page. Past 2 kB Postgres' default moves the vector to TOAST: the
    # row is then a few hundred bytes, a dozen share a page, and every read of a vector costs a
    # TOAST lookup.
    told = "; she said it was the best part of a long week, and that she would go again next spring with her sister and two old friends from school"
    await insert_units(db, bank, [Unit(f"{u.text[:-1]}{told}.") for u in _facts(12)])
    per_page = await db.fetch(
        "SELECT (ctid::text::point)[0] AS page, count(*) AS n FROM memory_units WHERE bank_id = $1 GROUP BY 1",
        bank,
    )
    assert sum(r["n"] for r in per_page) == 12
    assert max(r["n"] for r in per_page) <= 3
