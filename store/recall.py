"""Recall SQL: one named query per retrieval arm, plus the hydration reads.

Request filters compile to a WHERE fragment with bound parameters (`compile_filters`); no
value is ever spliced into the SQL text. Every arm applies the same fragment.

Vector search is per bank (store/vector_indexes.py): a bank without an index of its own is
scanned exactly (bank btree + sort); a bank with one is searched through it, ``ef_search``
sized to the limit, and the exact scan is the fallback when filters leave the index short.
The keyword arm scores every match of a small bank; a bank with keyword statistics
(store/keyword_stats.py) has its rarest terms' facts scored first, a bounded candidate set.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

import asyncpg
import numpy as np

from tempr.store.turn_order import nearby_column

__all__ = [
    "CAUSAL_LINK_TYPES",
    "BankShape",
    "KeywordPlan",
    "KeywordPrior",
    "RecallFilters",
    "bank_shape",
    "compile_filters",
    "event_date",
    "fetch_chunks",
    "fetch_units",
    "graph_expand",
    "journal_head",
    "keyword_plan",
    "keyword_search",
    "semantic_search",
    "semantic_sql",
    "temporal_search",
    "unit_entity_names",
    "vector_of",
]

CAUSAL_LINK_TYPES = ("causes", "caused_by", "enables", "prevents")

_HIT_UNITS = """
    id, text, fact_type, occurred_start, occurred_end, mentioned_at, confidence, proof_count, tags,
    source_message_ids, chunk_id
"""

# The time a fact covers: its occurrence span, else the moment it was mentioned.
_T_START = "coalesce({a}.occurred_start, {a}.mentioned_at)"
_T_END = "coalesce({a}.occurred_end, {a}.occurred_start, {a}.mentioned_at)"


@dataclass(frozen=True, slots=True)
class RecallFilters:
    types: Sequence[str] | None = None
    tags: Sequence[str] | None = None
    tags_match: str = "any"
    window_start: datetime | None = None
    window_end: datetime | None = None


_TAG_CLAUSES = {
    "any": "(cardinality({a}.tags) = 0 OR {a}.tags && {p})",
    "all": "(cardinality({a}.tags) = 0 OR {a}.tags @> {p})",
    "any_strict": "{a}.tags && {p}",
    "all_strict": "{a}.tags @> {p}",
    "exact": "({a}.tags @> {p} AND {a}.tags <@ {p})",
}


def compile_filters(f: RecallFilters, first_param: int, alias: str = "u") -> tuple[str, list[object]]:
    """``(" AND ...", params)`` whose placeholders start at ``$first_param``.

    An empty tag list filters like no tag list, except for ``exact`` (only untagged facts).
    """
    clauses: list[str] = []
    params: list[object] = []

    def bind(value: object, cast: str) -> str:
        params.append(value)
        return f"${first_param + len(params) - 1}::{cast}"

    if f.types is not None:
        clauses.append(f"{alias}.fact_type = ANY({bind(list(f.types), 'text[]')})")
    if f.tags is not None and (f.tags or f.tags_match == "exact"):
        if f.tags_match not in _TAG_CLAUSES:
            raise ValueError(f"unknown tags_match {f.tags_match!r}")
        clauses.append(_TAG_CLAUSES[f.tags_match].format(a=alias, p=bind(list(f.tags), "text[]")))
    if f.window_start is not None:
        clauses.append(f"{_T_END.format(a=alias)} >= {bind(f.window_start, 'timestamptz')}")
    if f.window_end is not None:
        clauses.append(f"{_T_START.format(a=alias)} <= {bind(f.window_end, 'timestamptz')}")
    return "".join(f" AND {c}" for c in clauses), params


def _vec(embedding: np.ndarray) -> np.ndarray:
    return np.asarray(embedding, dtype=np.float32)


def _nearest_units(exact: bool, where: str = "", columns: str = "u.id") -> str:
    """``columns`` and ``d``: the bank's facts with their cosine distance to $2, computed once per fact,
    for the caller to order by ``d`` and cut. An exact scan is fenced off (OFFSET 0) so the
    distance it sorts on is the one it returns; writing the operator twice (in the output and
    in ORDER BY) made Postgres compute it twice per fact, each reading the vector. On the
    index path the subquery is pulled up, so ``ORDER BY d`` is the HNSW index's order."""
    fence = " OFFSET 0" if exact else ""
    return f"""(SELECT {columns}, u.embedding <=> $2 AS d FROM memory_units u
                WHERE u.bank_id = $1 AND u.embedding IS NOT NULL{where}{fence}) near"""


@dataclass(frozen=True, slots=True)
class BankShape:
    """How many facts a bank holds, its ubiquitous entities (ids, names and aliases), whether
    it has a vector index of its own and keyword statistics, and the graph retriever its
    config names (unchecked)."""

    size: int
    entity_ids: tuple[UUID, ...]
    names: tuple[str, ...]
    indexed: bool = False
    keyword_stats: bool = False
    graph_retriever: str | None = None
    conversations: bool = False  # some journaled message belongs to a conversation


async def bank_shape(
    conn: asyncpg.Connection | asyncpg.Pool, bank_id: str, *, min_share: float, min_mentions: int
) -> BankShape:
    """The bank's size (from the counters), the entities in at least ``min_share`` of its facts
    (and in at least ``min_mentions``), its index, statistics, graph retriever and whether it
    journaled any conversation. One round trip: recall needs them all before it embeds the
    query."""
    row = await conn.fetchrow(
        """
        WITH size AS (SELECT coalesce(sum(n), 0)::int AS n FROM bank_fact_counts WHERE bank_id = $1),
        ubiquitous AS (
            SELECT e.id, e.canonical_name || e.aliases AS names FROM entities e, size
            WHERE e.bank_id = $1 AND e.mention_count >= greatest($3::int, $2::float8 * size.n)
        )
        SELECT size.n AS size,
               coalesce((SELECT array_agg(id) FROM ubiquitous), '{}') AS ids,
               coalesce((SELECT array_agg(name) FROM ubiquitous, unnest(names) AS name), '{}') AS names,
               EXISTS (SELECT 1 FROM bank_vector_indexes WHERE bank_id = $1) AS indexed,
               EXISTS (SELECT 1 FROM bank_keyword_stats WHERE bank_id = $1) AS keyword_stats,
               (SELECT config->>'graph_retriever' FROM banks WHERE id = $1) AS graph_retriever,
               EXISTS (SELECT 1 FROM messages
                       WHERE bank_id = $1 AND conversation_id IS NOT NULL) AS conversations
        FROM size
        """,
        bank_id,
        min_share,
        min_mentions,
    )
    return BankShape(
        row["size"],
        tuple(row["ids"]),
        tuple(row["names"]),
        row["indexed"],
        row["keyword_stats"],
        row["graph_retriever"],
        row["conversations"],
    )


async def event_date(
    conn: asyncpg.Connection,
    bank_id: str,
    embedding: np.ndarray,
    *,
    min_similarity: float,
    exact: bool,
    ef_search: int = 100,
) -> asyncpg.Record | None:
    """When the dated fact that best matches an event description happened, and how well it
    matches; None when no dated fact is close enough."""
    happened = "coalesce(u.occurred_start, u.mentioned_at)"
    nearest = _nearest_units(exact, f" AND {happened} IS NOT NULL", f"{happened} AS happened")
    sql = f"""
        SELECT happened, 1 - d AS similarity FROM {nearest}
        WHERE 1 - d >= $3
        ORDER BY d
        LIMIT 1
    """
    if exact:
        return await conn.fetchrow(sql, bank_id, _vec(embedding), min_similarity)
    async with conn.transaction():
        await _set_ef_search(conn, ef_search)
        return await conn.fetchrow(sql, bank_id, _vec(embedding), min_similarity)


async def _set_ef_search(conn: asyncpg.Connection, ef_search: int) -> None:
    # Local to the caller's transaction: only the index path opens one (an exact scan is one
    # round trip, not BEGIN, the query and COMMIT).
    await conn.execute("SELECT set_config('hnsw.ef_search', $1, true)", str(ef_search))


def semantic_sql(exact: bool, where: str = "") -> str:
    """`semantic_search`'s statement: $1 bank, $2 vector, $3 limit, $4 floor, $5 kept under
    the floor, then the filters' parameters (``where``, from `compile_filters` at 6)."""
    return f"""
        WITH nearest AS (
            SELECT id, 1 - d AS score FROM {_nearest_units(exact, where)}
            ORDER BY d
            LIMIT $3
        ),
        numbered AS (SELECT id, score, row_number() OVER (ORDER BY score DESC, id) AS n FROM nearest)
        SELECT id, score, (SELECT count(*) FROM nearest) AS fetched FROM numbered
        WHERE score >= $4 OR n <= $5
        ORDER BY score DESC, id
    """


async def semantic_search(
    conn: asyncpg.Connection,
    bank_id: str,
    embedding: np.ndarray,
    *,
    limit: int,
    min_similarity: float,
    filters: RecallFilters,
    exact: bool,
    ef_search: int,
    min_results: int = 0,
) -> list[asyncpg.Record]:
    """``(id, score, fetched)`` by cosine similarity, best first, at or above ``min_similarity``
    (the nearest ``min_results`` whatever their similarity).

    ``fetched`` counts the nearest rows before the similarity floor, so a caller can tell an
    index scan that came back short from a bank that simply has few close facts.
    """
    where, params = compile_filters(filters, 6)
    sql = semantic_sql(exact, where)
    args = (bank_id, _vec(embedding), limit, min_similarity, min_results, *params)
    if exact:
        return await conn.fetch(sql, *args)
    async with conn.transaction():
        await _set_ef_search(conn, ef_search)
        return await conn.fetch(sql, *args)


@dataclass(frozen=True, slots=True)
class KeywordPrior:
    """What each query word tells before the bank says anything: its share of general-English
    words (recall_api/recall/word_prior.py). BM25's idf is over documents, so a share ``f``
    becomes the chance that a fact of ``fact_words`` words holds the lexeme (its forms'
    shares summed), ``p = 1 - exp(-fact_words * f)``. A lexeme at most as common as
    ``rare_frequency`` weighs in full; a commoner one by its information relative to that,
    ``ln p / ln p_rare``. ``bank_weight`` in [0, 1] is how much the bank's own document
    frequencies are trusted instead (1: plain BM25); the weight is ``bank_weight + (1 -
    bank_weight) * prior``."""

    words: Sequence[str] = ()
    frequencies: Sequence[float] = ()
    bank_weight: float = 1.0
    rare_frequency: float = 1e-6
    fact_words: float = 20.0


_NO_PRIOR = KeywordPrior()


def _prior_cte(first: int) -> str:
    """The ``prior`` CTE, per lexeme of the query words, its weight; its parameters are
    ``$first..$first+4``: words, their shares, the bank weight, the rare share, fact words."""
    w, f, b, r, n = (f"${i}" for i in range(first, first + 5))
    return f"""
        prior AS (
            SELECT l.lexeme,
                   {b}::float8 + (1 - {b}::float8) * least(1.0,
                       ln(greatest(1 - exp(-{n}::float8 * sum(p.freq)), 1e-12))
                       / ln(1 - exp(-{n}::float8 * {r}::float8))) AS w
            FROM unnest({w}::text[], {f}::float8[]) AS p(word, freq),
                 unnest(to_tsvector('english', p.word)) AS l
            GROUP BY l.lexeme
        )"""


def _prior_args(prior: KeywordPrior) -> list[object]:
    return [
        list(prior.words),
        [float(x) for x in prior.frequencies],
        prior.bank_weight,
        prior.rare_frequency,
        prior.fact_words,
    ]


async def keyword_search(
    conn: asyncpg.Connection,
    bank_id: str,
    or_query: str,
    *,
    limit: int,
    filters: RecallFilters,
    bank_size: int,
    prior: KeywordPrior = _NO_PRIOR,
) -> list[asyncpg.Record]:
    """``(id, score, full_match)`` ranked by BM25 (k1 = 1.2, b = 0.75) over the stemmed lexemes;
    ``full_match`` is what an average-length fact holding every query lexeme once would score.

    Postgres' ts_rank_cd has no inverse document frequency: a speaker's name, present in
    almost every fact of a conversation, would weigh as much as a rare proper noun. The
    candidates are the facts matching any query lexeme, so each lexeme's document frequency
    is counted over them. A query with no lexeme (stop words only) matches nothing.

    A fact's term frequencies are read by marking the query's lexemes (setweight) and keeping
    only those (ts_filter), in C, rather than unnesting every lexeme of every candidate.

    Each lexeme's contribution is scaled by its ``prior`` weight; ``full_match`` is not, so
    a match on common words alone covers less of the question than one on telling words.
    """
    where, params = compile_filters(filters, 10)
    sql = f"""
        WITH q AS (SELECT websearch_to_tsquery('english', $2) AS tsq),
        terms AS (SELECT array_agg(lexeme) AS lexemes FROM unnest(to_tsvector('english', $2))),
        cand AS (
            SELECT u.id, u.search, greatest(length(u.search), 1)::float8 AS dl
            FROM memory_units u, q
            -- IS TRUE keeps the global GIN index out: for a bank without keyword statistics
            -- (below bank_index_min_facts) reading its rows by the bank btree is cheaper than
            -- every bank's matches of a common word (34 ms at 1k facts in a 1M table).
            WHERE u.bank_id = $1 AND numnode(q.tsq) > 0 AND (u.search @@ q.tsq) IS TRUE{where}
        ),
        avgdl AS (SELECT coalesce(avg(dl), 1) AS v FROM cand),
        tf AS (
            SELECT c.id, c.dl, t.lexeme, greatest(cardinality(t.positions), 1)::float8 AS tf
            FROM cand c, terms, unnest(ts_filter(setweight(c.search, 'A', terms.lexemes), '{{a}}')) t
        ),
        df AS (SELECT lexeme, count(*)::float8 AS df FROM tf GROUP BY lexeme),{_prior_cte(5)},
        full_match AS (
            SELECT coalesce(sum(ln(1 + ($4::float8 - coalesce(df.df, 0) + 0.5)
                                       / (coalesce(df.df, 0) + 0.5))), 0) AS v
            FROM (SELECT DISTINCT unnest(terms.lexemes) AS lexeme FROM terms) t LEFT JOIN df USING (lexeme)
        )
        SELECT tf.id,
               sum(ln(1 + ($4::float8 - df.df + 0.5) / (df.df + 0.5)) * coalesce(prior.w, 1)
                   * tf.tf * 2.2 / (tf.tf + 1.2 * (0.25 + 0.75 * tf.dl / avgdl.v))) AS score,
               max(full_match.v) AS full_match
        FROM tf JOIN df USING (lexeme) LEFT JOIN prior USING (lexeme), avgdl, full_match
        GROUP BY tf.id
        ORDER BY score DESC, tf.id
        LIMIT $3
    """
    return await conn.fetch(
        sql, bank_id, or_query, limit, float(max(bank_size, 1)), *_prior_args(prior), *params
    )


@dataclass(frozen=True, slots=True)
class KeywordPlan:
    """A bounded keyword search: every query lexeme with its document frequency (each scores),
    and the rarest ones whose facts are the candidates."""

    frequencies: dict[str, int]
    essential: tuple[str, ...]

    @property
    def complete(self) -> bool:
        """Every lexeme is essential: the result is the unbounded one."""
        return len(self.essential) == len(self.frequencies)


def keyword_plan(frequencies: dict[str, int], *, max_candidates: int) -> KeywordPlan:
    """The rarest lexemes while their facts add up to at most ``max_candidates`` (at least
    one). A fact with none of them has only common words, of low idf: it would rank low."""
    essential: list[str] = []
    total = 0
    for lexeme, df in sorted(frequencies.items(), key=lambda kv: (kv[1], kv[0])):
        if essential and total + df > max_candidates:
            break
        essential.append(lexeme)
        total += df
    return KeywordPlan(dict(frequencies), tuple(essential))


def tsquery_of(lexemes: Sequence[str]) -> str:
    """``'a' | 'b'``: lexemes already stemmed, quoted as tsquery input wants (no re-parsing)."""
    quoted = ("'" + lx.replace("\\", "\\\\").replace("'", "''") + "'" for lx in lexemes)
    return " | ".join(quoted)


async def bounded_keyword_search(
    conn: asyncpg.Connection,
    bank_id: str,
    plan: KeywordPlan,
    *,
    limit: int,
    max_candidates: int,
    filters: RecallFilters,
    bank_size: int,
    prior: KeywordPrior = _NO_PRIOR,
) -> list[asyncpg.Record]:
    """``(id, score, full_match)`` by the same BM25 as `keyword_search`, over the facts of the plan's
    essential lexemes only (at most ``max_candidates``), each scored on every query lexeme
    with the bank's document frequencies and its ``prior`` weight."""
    if not plan.essential:
        return []
    where, params = compile_filters(filters, 13)
    sql = f"""
        WITH terms AS (SELECT * FROM unnest($2::text[], $3::float8[]) AS t(lexeme, df)),
        cand AS (
            SELECT u.id, u.search, greatest(length(u.search), 1)::float8 AS dl
            FROM memory_units u
            WHERE u.bank_id = $1 AND u.search @@ $4::tsquery{where}
            LIMIT $5
        ),
        avgdl AS (SELECT coalesce(avg(dl), 1) AS v FROM cand),
        tf AS (
            SELECT c.id, c.dl, t.lexeme, greatest(cardinality(t.positions), 1)::float8 AS tf
            FROM cand c, unnest(ts_filter(setweight(c.search, 'A', $2::text[]), '{{a}}')) t
        ),{_prior_cte(8)}
        SELECT tf.id,
               sum(ln(1 + ($6::float8 - terms.df + 0.5) / (terms.df + 0.5)) * coalesce(prior.w, 1)
                   * tf.tf * 2.2 / (tf.tf + 1.2 * (0.25 + 0.75 * tf.dl / avgdl.v))) AS score,
               (SELECT sum(ln(1 + ($6::float8 - t.df + 0.5) / (t.df + 0.5))) FROM terms t) AS full_match
        FROM tf JOIN terms USING (lexeme) LEFT JOIN prior USING (lexeme), avgdl
        GROUP BY tf.id
        ORDER BY score DESC, tf.id
        LIMIT $7
    """
    lexemes = list(plan.frequencies)
    return await conn.fetch(
        sql,
        bank_id,
        lexemes,
        [float(max(plan.frequencies[lx], 1)) for lx in lexemes],
        tsquery_of(plan.essential),
        max_candidates,
        float(max(bank_size, 1)),
        limit,
        *_prior_args(prior),
        *params,
    )


async def graph_expand(
    conn: asyncpg.Connection,
    bank_id: str,
    embedding: np.ndarray,
    *,
    seed_count: int,
    seed_min_similarity: float,
    entity_weight: float,
    semantic_link_min: float,
    causal_boost: float,
    hop_decay: float,
    include_seeds: bool,
    limit: int,
    filters: RecallFilters,
    exact: bool,
    ef_search: int,
    ubiquitous_entities: Sequence[UUID],
) -> list[asyncpg.Record]:
    """Neighbours of the top semantic hits: ``(id, score, entity, semantic, causal, seeds)``.

    score = tanh(entity_weight * shared entities) + best semantic-link weight
    + best causal-link weight * causal_boost, each signal scaled by the similarity of the
    seed it spreads from (spreading activation) and by `hop_decay` for the hop; a seed starts
    with its own similarity, so it keeps its place against its neighbours. Non-causal links are stored once per pair, so links
    are followed in both directions; causal ones too (cause and effect both explain).
    """
    where, params = compile_filters(filters, 12)
    causal = ", ".join(f"'{t}'" for t in CAUSAL_LINK_TYPES)
    sql = f"""
        WITH seeds AS (
            SELECT id, sim FROM (
                SELECT id, 1 - d AS sim FROM {_nearest_units(exact, where)}
                ORDER BY d
                LIMIT $3
            ) s WHERE sim >= $4
        ),
        entity_hits AS (
            SELECT ue2.unit_id AS id,
                   tanh($5::float8 * count(DISTINCT ue2.entity_id)) * max(s.sim) AS score
            FROM seeds s
            JOIN unit_entities ue1 ON ue1.unit_id = s.id
            JOIN unit_entities ue2 ON ue2.entity_id = ue1.entity_id
            WHERE ue2.bank_id = $1 AND ue2.unit_id <> s.id
              -- A ubiquitous entity (a conversation's speakers) connects everything to
              -- everything and says nothing: it is left out of the entity signal.
              AND NOT ue1.entity_id = ANY($9::uuid[])
            GROUP BY ue2.unit_id
        ),
        edges AS (
            SELECT l.to_id AS id, l.link_type, l.weight, l.weight * s.sim AS activation
            FROM memory_links l JOIN seeds s ON s.id = l.from_id WHERE l.bank_id = $1
            UNION ALL
            SELECT l.from_id, l.link_type, l.weight, l.weight * s.sim
            FROM memory_links l JOIN seeds s ON s.id = l.to_id WHERE l.bank_id = $1
        ),
        signals AS (
            SELECT id, score AS entity, 0::float8 AS semantic, 0::float8 AS causal, 0::float8 AS seed
            FROM entity_hits
            UNION ALL
            SELECT id, 0::float8, max(activation)::float8, 0::float8, 0::float8 FROM edges
            WHERE link_type = 'semantic' AND weight >= $6::float8 GROUP BY id
            UNION ALL
            SELECT id, 0::float8, 0::float8, max(activation)::float8 * $7::float8, 0::float8 FROM edges
            WHERE link_type IN ({causal}) GROUP BY id
            UNION ALL
            SELECT id, 0::float8, 0::float8, 0::float8, sim::float8 FROM seeds WHERE $11::bool
        ),
        scored AS (
            SELECT id, sum(entity) AS entity, sum(semantic) AS semantic, sum(causal) AS causal,
                   sum(seed) AS seed
            FROM signals GROUP BY id
        )
        SELECT u.id, sc.seed + $10::float8 * (sc.entity + sc.semantic + sc.causal) AS score,
               sc.entity, sc.semantic, sc.causal, (SELECT count(*) FROM seeds) AS seeds
        FROM scored sc JOIN memory_units u ON u.id = sc.id
        WHERE u.bank_id = $1{where}
          AND sc.seed + sc.entity + sc.semantic + sc.causal > 0
        ORDER BY score DESC, u.id
        LIMIT $8
    """
    args = [bank_id, _vec(embedding), seed_count, seed_min_similarity, entity_weight]
    args += [
        semantic_link_min,
        causal_boost,
        limit,
        list(ubiquitous_entities),
        hop_decay,
        include_seeds,
        *params,
    ]
    if exact:
        return await conn.fetch(sql, *args)
    async with conn.transaction():
        await _set_ef_search(conn, ef_search)
        return await conn.fetch(sql, *args)


async def temporal_search(
    conn: asyncpg.Connection,
    bank_id: str,
    embedding: np.ndarray | None,
    *,
    start: datetime,
    end: datetime,
    buckets: int,
    limit: int,
    filters: RecallFilters,
) -> list[asyncpg.Record]:
    """Facts overlapping [start, end], strongest-per-time-bucket first.

    Rows: ``(id, score, bucket, bucket_rank, t_start, t_end)``; score is the cosine
    similarity to the query (-1 when either side has no embedding). Round-robin over the
    buckets by per-bucket rank spreads the selection across the window.
    """
    where, params = compile_filters(filters, 7)
    t0, t1 = _T_START.format(a="u"), _T_END.format(a="u")
    row = f"SELECT u.id, coalesce(1 - (u.embedding <=> $2), -1) AS score, {t0} AS t0, {t1} AS t1 FROM memory_units u"
    # Overlap (t0 <= end and t1 >= start) read as two index ranges (migrations/0014): facts that
    # start inside the window, and intervals that started before it and reach into it.
    sql = f"""
        WITH inwin AS (
            {row} WHERE u.bank_id = $1 AND {t0} BETWEEN $3 AND $4 AND {t1} >= $3{where}
            UNION ALL
            {row} WHERE u.bank_id = $1 AND {t1} > {t0} AND {t0} < $3 AND {t1} >= $3{where}
        ),
        bucketed AS (
            SELECT id, score, t0, t1, least(greatest(width_bucket(
                       extract(epoch FROM t0 + (greatest(t1, t0) - t0) / 2),
                       extract(epoch FROM $3::timestamptz), extract(epoch FROM $4::timestamptz),
                       $5), 1), $5) AS bucket
            FROM inwin
        ),
        ranked AS (
            SELECT *, row_number() OVER (PARTITION BY bucket ORDER BY score DESC, id) AS bucket_rank
            FROM bucketed
        )
        SELECT id, score, bucket, bucket_rank, t0 AS t_start, t1 AS t_end FROM ranked
        ORDER BY bucket_rank, score DESC, id
        LIMIT $6
    """
    vec = None if embedding is None else _vec(embedding)
    return await conn.fetch(sql, bank_id, vec, start, end, buckets, limit, *params)


async def fetch_units(
    conn: asyncpg.Connection,
    bank_id: str,
    ids: Sequence[UUID],
    embedding: np.ndarray | None = None,
    *,
    with_embeddings: bool = False,
    passage_turns: int = 0,
) -> list[asyncpg.Record]:
    """The facts' rows, each with ``cosine``: its similarity to ``embedding`` (None without
    one, or for a fact without an embedding), and with ``with_embeddings`` its own
    ``embedding`` in pgvector's binary form, for `vector_of` (recall's diversity step needs
    the head's: fetched here, it costs no second round trip; left undecoded, the rest of the
    candidates cost no vector objects). With ``passage_turns`` > 0 each row also has ``nearby``: the
    ``passage_turns`` turns around each of its source turns (store/turn_order.py), read in
    this statement for recall's passage context."""
    vectors = ", vector_send(embedding) AS embedding" if with_embeddings else ""
    nearby = (
        f", {nearby_column('$1', 'source_message_ids', '$4::int')} AS nearby" if passage_turns > 0 else ""
    )
    args: list[object] = [bank_id, list(ids), None if embedding is None else _vec(embedding)]
    if passage_turns > 0:
        args.append(passage_turns)
    return await conn.fetch(
        f"""SELECT {_HIT_UNITS}{vectors}{nearby}, CASE WHEN $3::vector IS NULL THEN NULL
                                      ELSE 1 - (embedding <=> $3::vector) END AS cosine
            FROM memory_units WHERE bank_id = $1 AND id = ANY($2::uuid[])""",
        *args,
    )


def vector_of(raw: bytes) -> np.ndarray:
    """A vector from pgvector's binary form (``vector_send``: dimension, a reserved word, then
    big-endian float4s)."""
    return np.frombuffer(raw, dtype=">f4", offset=4).astype(np.float32)


async def unit_entity_names(
    conn: asyncpg.Connection, bank_id: str, ids: Sequence[UUID]
) -> dict[UUID, list[str]]:
    rows = await conn.fetch(
        """
        SELECT ue.unit_id, e.canonical_name FROM unit_entities ue
        JOIN entities e ON e.id = ue.entity_id
        WHERE ue.bank_id = $1 AND ue.unit_id = ANY($2::uuid[])
        ORDER BY ue.unit_id, e.canonical_name
        """,
        bank_id,
        list(ids),
    )
    names: dict[UUID, list[str]] = {}
    for r in rows:
        names.setdefault(r["unit_id"], []).append(r["canonical_name"])
    return names


async def fetch_chunks(conn: asyncpg.Connection, bank_id: str, ids: Sequence[UUID]) -> dict[UUID, str]:
    rows = await conn.fetch(
        "SELECT id, text FROM chunks WHERE bank_id = $1 AND id = ANY($2::uuid[])", bank_id, list(ids)
    )
    return {r["id"]: r["text"] for r in rows}


async def journal_head(conn: asyncpg.Connection | asyncpg.Pool) -> int:
    """Highest journal sequence number handed out so far (0 for an empty journal)."""
    return await conn.fetchval("SELECT coalesce(max(seq), 0) FROM messages")
