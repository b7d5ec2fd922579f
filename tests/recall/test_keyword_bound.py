"""The keyword arm of a big bank: MaxScore's cut, proven against scoring every match."""

from __future__ import annotations

import asyncpg
import numpy as np
import pytest

from tempr.recall_api.recall.arms import ArmContext, run_arm
from tempr.recall_api.recall.arms.keyword import keyword_or_query
from tempr.recall_api.recall.config import RecallConfig
from tempr.store import keyword_bound, keyword_indexes, keyword_stats
from tempr.store import recall as sql
from tests.recall.bankkit import Unit, insert_units

QUESTION = "Which orchids does Audrey grow?"
PEOPLE = ["Ana", "Bruno", "Chen", "Dara", "Emeka", "Farah"]
TOPICS = ["sailing", "pottery", "chess", "baking", "hiking", "violins", "astronomy", "gardening"]


def test_covers_are_the_minimal_sets_of_terms_that_reach_the_threshold() -> None:
    bounds = {"a": 5.0, "b": 1.0, "c": 4.5}
    assert sorted(keyword_bound.covers(bounds, 5.5) or []) == [("a", "b"), ("a", "c"), ("c", "b")]
    assert keyword_bound.covers(bounds, 4.8) == [("a",), ("c", "b")]
    assert keyword_bound.covers(bounds, 10.6) == []  # no fact of these terms alone can get there
    assert keyword_bound.covers(bounds, 0.0) == [("a",), ("c",), ("b",)]
    four = {t: 1.0 for t in "abcd"}
    assert len(keyword_bound.covers(four, 2.5) or []) == 4  # every three of four
    assert keyword_bound.covers(four, 2.5, max_clauses=3) is None  # too many: any term may do


async def _bank(db: asyncpg.Pool, bank: str) -> dict[str, list[Unit]]:
    """462 facts: 30 long ones about an orchid (the question's rarest word), 80 long ones and 2
    short ones naming Audrey (common), 150 with "grew" (commoner still) and 200 with none of
    the question's words. The short ones name Audrey twice: they outscore every orchid fact,
    which only scoring Audrey's facts can tell. No fact of "grew" alone can."""
    units = {
        "orchid": [
            Unit(
                f"On walk {i} through the botanical garden the visitors admired an orchid beside tall ferns."
            )
            for i in range(30)
        ],
        "audrey_long": [
            Unit(f"Audrey wrote a long letter about the harbour, the trains and the market on day {i}.")
            for i in range(80)
        ],
        "audrey_short": [Unit("Audrey called Audrey."), Unit("Audrey, Audrey!")],
        "grew": [
            Unit(f"{PEOPLE[i % len(PEOPLE)]} grew tomatoes in the garden on day {i}.") for i in range(150)
        ],
        "filler": [
            Unit(f"{PEOPLE[i % len(PEOPLE)]} talked about {TOPICS[i % len(TOPICS)]} on day {i}.")
            for i in range(200)
        ],
    }
    await insert_units(db, bank, [u for group in units.values() for u in group])
    async with db.acquire() as conn:
        await keyword_stats.refresh_bank(conn, bank)
    return units


async def _search(
    conn: asyncpg.Connection, bank: str, *, limit: int, cap: int
) -> tuple[keyword_bound.KeywordResult, list[keyword_bound.KeywordHit]]:
    text = keyword_or_query(QUESTION)
    terms, avg_length = await keyword_bound.term_stats(conn, bank, text, sql.KeywordPrior())
    assert avg_length is not None
    args = {"bank_size": 462, "limit": limit, "filters": sql.RecallFilters()}
    found = await keyword_bound.bounded_search(conn, bank, terms, avg_length, max_candidates=cap, **args)
    return found, await keyword_bound.exhaustive_search(conn, bank, terms, avg_length, **args)


@pytest.mark.integration
async def test_maxscore_finds_the_top_k_of_scoring_every_match_and_reads_fewer(
    db: asyncpg.Pool, bank: str
) -> None:
    units = await _bank(db, bank)
    short = {u.id for u in units["audrey_short"]}
    async with db.acquire() as conn:
        found, every = await _search(
            conn, bank, limit=5, cap=100
        )  # orchid 30 + Audrey 82 facts are over the cap
        deep = await keyword_bound.bounded_search(
            conn,
            bank,
            *await keyword_bound.term_stats(conn, bank, keyword_or_query(QUESTION), sql.KeywordPrior()),  # type: ignore[arg-type]
            bank_size=462,
            limit=50,
            proven_top=5,
            max_candidates=100,
            filters=sql.RecallFilters(),
        )
        text = keyword_or_query(QUESTION)
        plan = sql.keyword_plan(await keyword_stats.query_lexemes(conn, bank, text), max_candidates=100)
        rarest = await sql.bounded_keyword_search(
            conn, bank, plan, limit=5, max_candidates=100, filters=sql.RecallFilters(), bank_size=462
        )
    assert short <= {h.id for h in every[:2]}  # scoring every match puts them first
    assert not short & {r["id"] for r in rarest}  # the rarest terms' facts alone miss them
    assert [h.id for h in found.hits] == [h.id for h in every]
    assert np.allclose([h.score for h in found.hits], [h.score for h in every])
    assert found.proven and found.phases == 2
    # Deeper than the proven top: the proven 5 first, then the best of what was read.
    assert [h.id for h in deep.hits[:5]] == [h.id for h in every] and deep.proven
    assert len(deep.hits) == 50 and deep.candidates == found.candidates
    # The orchid facts, then Audrey's: not the facts of "grew", whose bound is under the 5th score.
    assert found.candidates == 30 + 82


@pytest.mark.integration
async def test_a_cap_that_cuts_a_read_leaves_the_result_unproven(db: asyncpg.Pool, bank: str) -> None:
    await _bank(db, bank)
    async with db.acquire() as conn:
        found, every = await _search(conn, bank, limit=5, cap=1)
    assert not found.proven
    assert len(found.hits) <= 5 and {h.id for h in found.hits} <= {h.id for h in await _all(db, bank)}
    assert len(every) == 5


async def _all(db: asyncpg.Pool, bank: str) -> list[keyword_bound.KeywordHit]:
    async with db.acquire() as conn:
        _, every = await _search(conn, bank, limit=1000, cap=1000)
    return every


@pytest.mark.integration
async def test_the_keyword_arm_of_a_bank_with_statistics_returns_the_proven_top_k(
    db: asyncpg.Pool, bank: str
) -> None:
    units = await _bank(db, bank)

    async def arm(cfg: RecallConfig) -> tuple[list[object], str]:
        ctx = ArmContext(
            bank_id=bank,
            keyword_text=QUESTION,
            embedding=None,
            filters=sql.RecallFilters(),
            limit=5,
            cfg=cfg,
            bank_size=462,
            keyword_stats=True,
        )
        result = await run_arm(db, "keyword", ctx)
        return list(result.ids), result.note or ""

    plain = {"keyword_prior_facts": 0, "keyword_max_candidates": 100}  # the prior is checked elsewhere
    ids, note = await arm(RecallConfig(**plain))
    assert ids == [h.id for h in (await _all(db, bank))[:5]] and "proven" in note
    assert {u.id for u in units["audrey_short"]} <= set(ids)
    old_ids, old_note = await arm(RecallConfig(**plain, keyword_maxscore=False))
    assert "rarest" in old_note and not {u.id for u in units["audrey_short"]} & set(old_ids)


@pytest.mark.integration
async def test_a_bank_with_keyword_statistics_gets_a_gin_index_of_its_own(
    db: asyncpg.Pool, bank: str
) -> None:
    await _bank(db, bank)
    name = keyword_indexes.bank_gin_name(bank)
    async with db.acquire() as conn:
        assert (bank, "built") in await keyword_indexes.maintain(conn)
        assert await conn.fetchval("SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass($1)", name)
        await conn.execute("DELETE FROM bank_keyword_stats WHERE bank_id = $1", bank)
        assert (bank, "dropped") in await keyword_indexes.maintain(conn)
        assert await conn.fetchval("SELECT to_regclass($1)", name) is None


@pytest.mark.integration
async def test_request_filters_apply_to_both_reads(db: asyncpg.Pool, bank: str) -> None:
    await _bank(db, bank)
    async with db.acquire() as conn:
        text = keyword_or_query(QUESTION)
        terms, avg_length = await keyword_bound.term_stats(conn, bank, text, sql.KeywordPrior())
        assert avg_length is not None
        by_type = {}
        for types in (["world"], ["experience"]):
            found = await keyword_bound.bounded_search(
                conn,
                bank,
                terms,
                avg_length,
                bank_size=462,
                limit=5,
                max_candidates=100,
                filters=sql.RecallFilters(types=types),
            )
            by_type[types[0]] = found
    every = await _all(db, bank)
    assert [h.id for h in by_type["world"].hits] == [h.id for h in every[:5]]  # every fact is "world"
    assert by_type["world"].phases == 2  # the second read got its own filter parameters right
    assert by_type["experience"].hits == []
