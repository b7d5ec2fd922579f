"""The keyword arm: BM25 over the facts' words, the query's words OR-ed with their inflections."""

from __future__ import annotations

import re
from collections.abc import Sequence
from uuid import UUID

import asyncpg

from tempr.recall_api.recall.arms.base import ArmContext, ArmHit, ArmResult, recall_arm
from tempr.recall_api.recall.config import RecallConfig
from tempr.recall_api.recall.inflections import word_forms
from tempr.recall_api.recall.word_prior import word_frequencies, zipf_to_frequency
from tempr.store import keyword_bound
from tempr.store import recall as sql
from tempr.store.keyword_stats import query_lexemes

__all__ = ["keyword_arm", "keyword_or_query", "keyword_prior"]

_WORD = re.compile(r"\w+")


def keyword_or_query(query: str, max_terms: int = 64) -> str:
    """The query's words, then their other inflections, OR-ed in websearch syntax:
    ``"melanie or bought or buy or buys or buying"``.

    Only word characters survive, so quotes, minus signs and operators in the user's text
    cannot change the query's meaning; stop words are dropped later by the parser.
    """
    words = [w for w in _WORD.findall(query.lower()) if w != "or"]
    terms = dict.fromkeys(words)
    for word in words:
        terms.update(dict.fromkeys(word_forms(word)))
    return " or ".join(list(terms)[:max_terms])


@recall_arm("keyword", needs_vector=False)
async def keyword_arm(pool: asyncpg.Pool, ctx: ArmContext) -> ArmResult:
    or_query = keyword_or_query(ctx.keyword_text, ctx.cfg.keyword_max_terms)
    if not or_query:
        return ArmResult("keyword", [], note="no terms")
    async with pool.acquire() as conn:
        return await _matches(conn, ctx, or_query)


def keyword_prior(or_query: str, bank_size: int, cfg: RecallConfig) -> sql.KeywordPrior:
    """The general-English prior on the query's terms, trusted less as the bank grows."""
    if not cfg.keyword_prior_facts:
        return sql.KeywordPrior()
    words, frequencies = word_frequencies(or_query.split(" or "))
    size = max(bank_size, 0)
    return sql.KeywordPrior(
        words,
        frequencies,
        bank_weight=size / (size + cfg.keyword_prior_facts),
        rare_frequency=zipf_to_frequency(cfg.keyword_prior_rare_zipf),
        fact_words=cfg.keyword_prior_fact_words,
    )


async def _matches(conn: asyncpg.Connection, ctx: ArmContext, or_query: str) -> ArmResult:
    prior = keyword_prior(or_query, ctx.bank_size, ctx.cfg)
    if not ctx.keyword_stats:
        rows = await sql.keyword_search(
            conn,
            ctx.bank_id,
            or_query,
            limit=ctx.limit,
            filters=ctx.filters,
            bank_size=ctx.bank_size,
            prior=prior,
        )
        return ArmResult("keyword", _keyword_hits(rows), note=or_query)
    cap = ctx.cfg.keyword_max_candidates
    if ctx.cfg.keyword_maxscore:
        terms, avg_length = await keyword_bound.term_stats(conn, ctx.bank_id, or_query, prior)
        if avg_length is not None:  # else statistics from before lengths were kept: the old cut
            found = await keyword_bound.bounded_search(
                conn,
                ctx.bank_id,
                terms,
                avg_length,
                bank_size=ctx.bank_size,
                limit=ctx.limit,
                proven_top=ctx.cfg.keyword_proven_top,
                max_candidates=cap,
                filters=ctx.filters,
            )
            proof = f"top {min(ctx.cfg.keyword_proven_top, ctx.limit)} " + (
                "proven" if found.proven else "capped"
            )
            return ArmResult(
                "keyword",
                [_hit(h.id, h.score, found.full_match) for h in found.hits],
                note=f"{or_query} ({found.candidates} scored in {found.phases} reads, {proof})",
            )
    plan = sql.keyword_plan(await query_lexemes(conn, ctx.bank_id, or_query), max_candidates=cap)
    rows = await sql.bounded_keyword_search(
        conn,
        ctx.bank_id,
        plan,
        limit=ctx.limit,
        max_candidates=cap,
        filters=ctx.filters,
        bank_size=ctx.bank_size,
        prior=prior,
    )
    hits = _keyword_hits(rows)
    bound = "all terms" if plan.complete else f"rarest {len(plan.essential)}/{len(plan.frequencies)} terms"
    return ArmResult("keyword", hits, note=f"{or_query} ({bound})")


def _keyword_hits(rows: Sequence[asyncpg.Record]) -> list[ArmHit]:
    """Each match with its coverage: its BM25 over a full match's, in [0, 1]. One common word
    of a four-word question counts for little, however alone it is in matching (on a small
    bank, "days" in "sleeps most of the day" for "Where is Ingrid based these days?")."""
    return [_hit(r["id"], float(r["score"]), float(r["full_match"] or 0)) for r in rows]


def _hit(fact: UUID, score: float, full_match: float) -> ArmHit:
    return ArmHit(fact, score, {"coverage": min(score / full_match, 1.0) if full_match else 0.0})
