"""The keyword arm of a bank with keyword statistics: BM25's top k, with a proof of the cut.

Scoring every fact that shares a word with the question costs tens of thousands of facts in
a 100k bank when the question holds a common word. MaxScore (Turtle and Flood, 1995) cuts
that safely:

1. the facts of the rarest terms (their frequencies add up to the cap) are scored on every
   term: the k-th score is a threshold ``theta``;
2. each other term's largest possible share of a score is known from the statistics (its
   idf, its prior weight and its largest BM25 share in any fact of the bank): a fact holding
   none of the rare terms scores at most the sum over its other terms, so only the facts
   holding a set of them whose shares add up to ``theta`` can still enter the top k;
3. those sets are an OR of ANDs in one tsquery (GIN intersects the postings, in the bank's
   own index: store/keyword_indexes.py), and the facts they match, less the ones already
   scored, are scored too.

The top k is then the top k of scoring every matching fact, unless a cap cut one of the two
reads (``proven`` says which); below it come the best of the facts read. A fact scores the
same whichever candidates are read with it: BM25's average length is the bank's, kept with
the statistics. The proof holds for the facts counted at the last refresh (the bank within
``stale_share`` of them, store/keyword_stats.py); a newer fact in which a term weighs more
than in any counted one could be missed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from uuid import UUID

import asyncpg

from tempr.store.recall import KeywordPrior, RecallFilters, _prior_args, _prior_cte, compile_filters

__all__ = [
    "KeywordHit",
    "KeywordResult",
    "TermStats",
    "bounded_search",
    "covers",
    "exhaustive_search",
    "term_stats",
]

_K1, _B = 1.2, 0.75
_SHARE_LIMIT = _K1 + 1  # tf / (tf + k1 * norm) < 1: the bound of a lexeme not counted


@dataclass(frozen=True, slots=True)
class TermStats:
    """A query lexeme in the bank: document frequency (0: not seen at the refresh), the most it
    adds to a fact's score before its idf (store/keyword_stats.py), and its prior weight."""

    lexeme: str
    df: int
    max_share: float
    weight: float


@dataclass(frozen=True, slots=True)
class KeywordHit:
    id: UUID
    score: float


@dataclass(frozen=True, slots=True)
class KeywordResult:
    """The top hits, what a fact holding every term once scores (``full_match``), the facts
    scored, and whether the first ``proven_top`` hits are provably those of scoring every
    matching fact."""

    hits: list[KeywordHit]
    full_match: float
    candidates: int
    proven: bool
    phases: int


def idf(df: int, facts: int) -> float:
    df = max(df, 1)
    return math.log(1 + (max(facts, 1) - df + 0.5) / (df + 0.5))


def share_bound(term: TermStats, facts: int) -> float:
    """The most ``term`` can add to a fact's score."""
    return idf(term.df, facts) * term.weight * term.max_share


def covers(bounds: dict[str, float], theta: float, max_clauses: int = 64) -> list[tuple[str, ...]] | None:
    """The minimal sets of terms whose bounds add up to ``theta``: a fact holding none of them
    all scores below it. ``None`` when there are more than ``max_clauses`` (any term may do)."""
    terms = sorted(bounds, key=lambda t: (-bounds[t], t))
    rest = [sum(bounds[t] for t in terms[i:]) for i in range(len(terms) + 1)]
    out: list[tuple[str, ...]] = []

    def extend(start: int, chosen: tuple[str, ...], total: float) -> bool:
        for i in range(start, len(terms)):
            if total + rest[i] < theta:
                return True
            now = total + bounds[terms[i]]
            if now >= theta:  # adding in falling order: dropping any member falls below theta
                out.append((*chosen, terms[i]))
                if len(out) > max_clauses:
                    return False
            elif not extend(i + 1, (*chosen, terms[i]), now):
                return False
        return True

    return out if extend(0, (), 0.0) else None


def _quote(lexeme: str) -> str:
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


def _any_of(clauses: Sequence[Sequence[str]]) -> str:
    return " | ".join("(" + " & ".join(_quote(t) for t in c) + ")" for c in clauses)


async def term_stats(
    conn: asyncpg.Connection, bank_id: str, or_query: str, prior: KeywordPrior
) -> tuple[list[TermStats], float | None]:
    """The query's lexemes with their statistics and prior weights, and the bank's fact
    average fact length (``None``: statistics counted before it was kept)."""
    rows = await conn.fetch(
        f"""
        WITH {_prior_cte(3)}
        SELECT t.lexeme, coalesce(l.df, 0) AS df, l.max_share, coalesce(p.w, 1) AS w, s.avg_length
        FROM unnest(to_tsvector('english', $2)) t
        LEFT JOIN bank_lexemes l ON l.bank_id = $1 AND l.lexeme = t.lexeme
        LEFT JOIN prior p ON p.lexeme = t.lexeme
        LEFT JOIN bank_keyword_stats s ON s.bank_id = $1
        """,
        bank_id,
        or_query,
        *_prior_args(prior),
    )
    terms = [TermStats(r["lexeme"], r["df"], r["max_share"] or _SHARE_LIMIT, float(r["w"])) for r in rows]
    first = rows[0] if rows else None
    if first is None or first["avg_length"] is None:
        return terms, None
    return terms, float(first["avg_length"])


async def _score(
    conn: asyncpg.Connection,
    bank_id: str,
    weights: tuple[list[str], list[float]],
    match: str,
    *,
    exclude: str | None = None,
    avg_length: float,
    max_candidates: int,
    limit: int,
    filters: RecallFilters,
) -> tuple[list[KeywordHit], int]:
    """The top ``limit`` of the facts matching ``match`` and not ``exclude`` (at most
    ``max_candidates`` read), each scored on every term; and how many were read."""
    args: list[object] = [bank_id, weights[0], weights[1], match, max_candidates, avg_length, limit]

    def bind(value: object, cast: str) -> str:
        args.append(value)
        return f"${len(args)}::{cast}"

    extra = f" AND NOT (u.search @@ {bind(exclude, 'tsquery')})" if exclude else ""
    where, params = compile_filters(filters, len(args) + 1)
    rows = await conn.fetch(
        f"""
        WITH terms AS (SELECT * FROM unnest($2::text[], $3::float8[]) AS t(lexeme, weight)),
        cand AS (
            SELECT u.id, u.search, greatest(length(u.search), 1)::float8 AS dl FROM memory_units u
            WHERE u.bank_id = $1 AND u.search @@ $4::tsquery{extra}{where}
            LIMIT $5
        ),
        tf AS (
            SELECT c.id, c.dl, t.lexeme, greatest(cardinality(t.positions), 1)::float8 AS tf
            FROM cand c, unnest(ts_filter(setweight(c.search, 'A', $2::text[]), '{{a}}')) t
        )
        SELECT tf.id,
               sum(terms.weight * tf.tf * {_K1 + 1} / (tf.tf + {_K1} * ({1 - _B} + {_B} * tf.dl / $6))) AS score,
               (SELECT count(*) FROM cand) AS candidates
        FROM tf JOIN terms USING (lexeme)
        GROUP BY tf.id
        ORDER BY score DESC, tf.id
        LIMIT $7
        """,
        *args,
        *params,
    )
    # Every candidate holds a term, so no row means none was read.
    hits = [KeywordHit(r["id"], float(r["score"])) for r in rows]
    return hits, int(rows[0]["candidates"]) if rows else 0


def _weights(terms: Sequence[TermStats], bank_size: int) -> tuple[list[str], list[float]]:
    return [t.lexeme for t in terms], [idf(t.df, bank_size) * t.weight for t in terms]


async def exhaustive_search(
    conn: asyncpg.Connection,
    bank_id: str,
    terms: Sequence[TermStats],
    avg_length: float,
    *,
    bank_size: int,
    limit: int,
    filters: RecallFilters,
) -> list[KeywordHit]:
    """The same scoring over every fact matching any term, no bound: the reference."""
    if not terms:
        return []
    hits, _ = await _score(
        conn,
        bank_id,
        _weights(terms, bank_size),
        _any_of([(t.lexeme,) for t in terms]),
        avg_length=avg_length,
        max_candidates=2**62,
        limit=limit,
        filters=filters,
    )
    return hits


async def bounded_search(
    conn: asyncpg.Connection,
    bank_id: str,
    terms: Sequence[TermStats],
    avg_length: float,
    *,
    bank_size: int,
    limit: int,
    proven_top: int | None = None,
    max_candidates: int,
    filters: RecallFilters,
) -> KeywordResult:
    """BM25's top ``limit`` over the bank's facts matching any of ``terms``, reading the rarest
    terms' facts first and then only the facts that could still beat the k-th score, k =
    ``proven_top`` (default: ``limit``). Below the k-th, the hits are the best of the facts
    read, as good as the rarest terms' facts alone or better."""
    if not terms:
        return KeywordResult([], 0.0, 0, True, 0)
    weights = _weights(terms, bank_size)
    full_match = sum(idf(t.df, bank_size) for t in terms)
    essential: list[str] = []
    total = 0
    for t in sorted(terms, key=lambda t: (t.df, t.lexeme)):
        if essential and total + t.df > max_candidates:
            break
        essential.append(t.lexeme)
        total += t.df
    first = _any_of([(t,) for t in essential])
    hits, read = await _score(
        conn,
        bank_id,
        weights,
        first,
        avg_length=avg_length,
        max_candidates=max_candidates + 1,
        limit=limit,
        filters=filters,
    )
    proven = read <= max_candidates
    rest = {t.lexeme: share_bound(t, bank_size) for t in terms if t.lexeme not in essential}
    k = min(proven_top or limit, limit)
    theta = hits[k - 1].score if len(hits) >= k else 0.0
    sets = covers(rest, theta * (1 - 1e-9)) if rest else []
    if sets == []:
        return KeywordResult(hits, full_match, read, proven, 1)
    more, extra = await _score(
        conn,
        bank_id,
        weights,
        _any_of(sets if sets is not None else [(t,) for t in rest]),
        exclude=first,
        avg_length=avg_length,
        max_candidates=max_candidates + 1,
        limit=limit,
        filters=filters,
    )
    merged = sorted([*hits, *more], key=lambda h: (-h.score, h.id))[:limit]
    return KeywordResult(merged, full_match, read + extra, proven and extra <= max_candidates, 2)
