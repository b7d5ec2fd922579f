"""Keyword statistics of big banks: document frequency per lexeme, for the bounded keyword arm.

BM25 needs each query term's document frequency in the bank. Counted at query time over
every fact that matches any term (what small banks still do), a common word in a 100k bank
means scoring tens of thousands of facts. Kept here instead, the arm knows each term's
weight before it reads a fact and scores the rare terms' facts first (store/keyword_bound.py).

Refreshed by the maintenance step when a bank of at least ``min_facts`` has no statistics yet,
has grown by ``stale_share`` since, or was counted before fact lengths were kept; a frequency a
few per cent off moves an idf by less than that, and a term new since the refresh counts as rare.
"""

from __future__ import annotations

import asyncpg

__all__ = ["maintain", "query_lexemes", "refresh_bank"]


async def refresh_bank(conn: asyncpg.Connection, bank_id: str) -> int:
    """Recount the bank's lexemes (one pass over its tsvectors); returns the facts counted.

    Beside each lexeme's document frequency, its largest BM25 share before the idf (k1 = 1.2, b = 0.75), ``tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * dl /
    avgdl))`` at its most favourable fact: they bound what a fact not yet read can score
    (store/keyword_bound.py)."""
    async with conn.transaction():
        await conn.execute("DELETE FROM bank_lexemes WHERE bank_id = $1", bank_id)
        facts, avg_length = await conn.fetchrow(
            """
            INSERT INTO bank_keyword_stats (bank_id, facts, avg_length)
            SELECT $1, count(*), coalesce(avg(greatest(length(search), 1)), 1)
            FROM memory_units WHERE bank_id = $1
            ON CONFLICT (bank_id) DO UPDATE SET facts = excluded.facts, avg_length = excluded.avg_length,
                refreshed_at = now()
            RETURNING facts, avg_length
            """,
            bank_id,
        )
        await conn.execute(
            """
            INSERT INTO bank_lexemes (bank_id, lexeme, df, max_share)
            SELECT $1, t.lexeme, count(*),
                   max(t.tf * 2.2 / (t.tf + 1.2 * (0.25 + 0.75 * greatest(length(u.search), 1) / $2::float8)))
            FROM memory_units u,
                 LATERAL (SELECT lexeme, greatest(cardinality(positions), 1)::float8 AS tf FROM unnest(u.search)) t
            WHERE u.bank_id = $1
            GROUP BY t.lexeme
            """,
            bank_id,
            avg_length,
        )
    return int(facts)


async def maintain(
    conn: asyncpg.Connection, *, min_facts: int, stale_share: float = 0.1
) -> list[tuple[str, int]]:
    """Refresh the statistics of big banks that have none or outgrew them, and forget those of
    banks that shrank below half of ``min_facts``; returns ``(bank, facts)`` refreshed."""
    await conn.execute(
        """
        DELETE FROM bank_lexemes l USING bank_keyword_stats s
        WHERE l.bank_id = s.bank_id AND s.bank_id NOT IN (
            SELECT bank_id FROM bank_fact_counts GROUP BY bank_id HAVING sum(n) >= $1 / 2)
        """,
        min_facts,
    )
    await conn.execute(
        """
        DELETE FROM bank_keyword_stats WHERE bank_id NOT IN (
            SELECT bank_id FROM bank_fact_counts GROUP BY bank_id HAVING sum(n) >= $1 / 2)
        """,
        min_facts,
    )
    stale = await conn.fetch(
        """
        SELECT c.bank_id FROM (
            SELECT bank_id, sum(n) AS facts FROM bank_fact_counts GROUP BY bank_id HAVING sum(n) >= $1
        ) c LEFT JOIN bank_keyword_stats s ON s.bank_id = c.bank_id
        WHERE s.bank_id IS NULL OR s.avg_length IS NULL OR abs(c.facts - s.facts) > $2 * s.facts
        ORDER BY c.facts DESC
        """,
        min_facts,
        stale_share,
    )
    return [(r["bank_id"], await refresh_bank(conn, r["bank_id"])) for r in stale]


async def query_lexemes(conn: asyncpg.Connection, bank_id: str, query: str) -> dict[str, int]:
    """The query's lexemes and their document frequency in the bank (0: not seen at the
    last refresh)."""
    rows = await conn.fetch(
        """
        SELECT t.lexeme, coalesce(l.df, 0) AS df FROM unnest(to_tsvector('english', $2)) t
        LEFT JOIN bank_lexemes l ON l.bank_id = $1 AND l.lexeme = t.lexeme
        """,
        bank_id,
        query,
    )
    return {r["lexeme"]: r["df"] for r in rows}
