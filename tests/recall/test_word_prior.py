"""The keyword arm weighs a query word by how common it is in general English, trusted less
as the bank's own document frequencies grow."""

from __future__ import annotations

import asyncpg
import pytest

from tempr.recall_api.recall.arms import ArmContext, ArmResult, run_arm
from tempr.recall_api.recall.arms.keyword import keyword_prior
from tempr.recall_api.recall.config import RecallConfig
from tempr.recall_api.recall.word_prior import word_frequencies, zipf_to_frequency
from tempr.store.keyword_stats import refresh_bank
from tempr.store.recall import RecallFilters
from tests.recall.bankkit import Unit, embed, insert_units

# Same length, one query word each: plain BM25 in a two-fact bank cannot tell them apart.
KOJO = "Kojo lives in Accra near the old fish market."
PASTRY = "Ama bakes pastry in Porto near the old market."
QUERY = "Does she live above the pastry shop?"


def test_common_words_are_more_frequent_than_telling_ones() -> None:
    words, freq = word_frequencies(["live", "Pastry", "kojo", "live"])
    assert words == ["live", "pastry", "kojo"]  # lowercased, once each
    live, pastry, _ = freq
    assert live > 10 * pastry > 0


def test_the_bank_takes_over_as_it_grows() -> None:
    cfg = RecallConfig(keyword_prior_facts=100)
    assert keyword_prior("live or lives", 10, cfg).bank_weight == pytest.approx(10 / 110)
    assert keyword_prior("live or lives", 100_000, cfg).bank_weight > 0.99
    assert keyword_prior("live or lives", 10, cfg).rare_frequency == pytest.approx(zipf_to_frequency(3.0))
    off = keyword_prior("live or lives", 10, RecallConfig(keyword_prior_facts=0))
    assert off.bank_weight == 1.0 and not off.words  # plain BM25


async def _keyword(
    db: asyncpg.Pool, bank: str, cfg: RecallConfig, *, size: int, stats: bool = False
) -> ArmResult:
    ctx = ArmContext(
        bank_id=bank,
        keyword_text=QUERY,
        embedding=embed([QUERY])[0],
        filters=RecallFilters(),
        limit=10,
        cfg=cfg,
        bank_size=size,
        keyword_stats=stats,
    )
    return await run_arm(db, "keyword", ctx)


def _by_text(result: ArmResult, units: list[Unit]) -> dict[str, tuple[float, float]]:
    text = {u.id: u.text for u in units}
    return {text[h.unit_id]: (h.score, h.detail["coverage"]) for h in result.hits}


@pytest.mark.integration
@pytest.mark.parametrize("stats", [False, True], ids=["small-bank", "with-keyword-statistics"])
async def test_a_telling_word_outweighs_a_common_one_in_a_small_bank(
    db: asyncpg.Pool, bank: str, stats: bool
) -> None:
    units = [Unit(KOJO), Unit(PASTRY)]
    await insert_units(db, bank, units)
    if stats:
        async with db.acquire() as conn:
            await refresh_bank(conn, bank)

    plain = _by_text(
        await _keyword(db, bank, RecallConfig(keyword_prior_facts=0), size=2, stats=stats), units
    )
    assert plain[KOJO][0] == pytest.approx(plain[PASTRY][0])  # BM25 alone: a tie

    prior = _by_text(await _keyword(db, bank, RecallConfig(), size=2, stats=stats), units)
    assert prior[PASTRY][0] > 0.8 * plain[PASTRY][0]  # a rare word keeps most of its weight
    assert prior[KOJO][0] < 0.7 * prior[PASTRY][0]  # "live" on its own tells little
    assert prior[KOJO][1] < 0.7 * plain[KOJO][1]  # and covers less of the question


@pytest.mark.integration
async def test_a_big_bank_keeps_its_bm25(db: asyncpg.Pool, bank: str) -> None:
    units = [Unit(KOJO), Unit(PASTRY)]
    await insert_units(db, bank, units)
    # The same two facts, read as the matches of a bank of 100k facts: its own document
    # frequencies carry the weight, general English almost none.
    plain = _by_text(await _keyword(db, bank, RecallConfig(keyword_prior_facts=0), size=100_000), units)
    prior = _by_text(await _keyword(db, bank, RecallConfig(), size=100_000), units)
    for text in (KOJO, PASTRY):
        assert prior[text][0] == pytest.approx(plain[text][0], rel=0.01)
