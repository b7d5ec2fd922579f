"""Recall tuning knobs, named presets for ablations, and the budget-to-depth mapping."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Annotated, Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = [
    "ARMS",
    "BUDGET_LIMITS",
    "GRAPH_RETRIEVERS",
    "PRESETS",
    "Arm",
    "Budget",
    "GraphRetrieverName",
    "RecallConfig",
    "arm_switch",
    "budget_to_limit",
    "get_preset",
]

# An arm's name: a module of recall/arms registered under it, and a switch here (arm_switch).
Arm = str

# bfs: spreading activation one hop out of the query's nearest facts; mpfp: meta-path forward
# push from the semantic (and temporal) arm's hits (recall/graph_mpfp.py).
GraphRetrieverName = Literal["bfs", "mpfp"]
GRAPH_RETRIEVERS: tuple[GraphRetrieverName, ...] = get_args(GraphRetrieverName)

Budget = Literal["low", "mid", "high"]
BUDGET_LIMITS: Mapping[Budget, int] = MappingProxyType({"low": 100, "mid": 300, "high": 1000})

# An alpha above 2 would let ``1 + alpha * (signal - 0.5)`` drop below zero and flip the sign
# of the final score, so alphas are bounded there.
_MAX_ALPHA = 2.0

_Divisor = Annotated[float, Field(gt=0.0, allow_inf_nan=False)]
_ARM_SWITCH = "recall_arm"


def arm_switch(default: bool = True) -> Any:
    """A retrieval arm's on/off switch: the config entry of a module in recall/arms."""
    return Field(default=default, json_schema_extra={_ARM_SWITCH: True})


class RecallConfig(BaseModel):
    """Everything recall needs besides the query itself. Immutable; derive with model_copy."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    # The retrieval arms, in the order they are listed in traces (recall/arms/<name>.py).
    semantic: bool = arm_switch()
    keyword: bool = arm_switch()
    graph: bool = arm_switch()
    temporal: bool = arm_switch()

    semantic_threshold: float = Field(default=0.3, ge=-1.0, le=1.0)  # cosine similarity floor
    # The nearest few are candidates whatever their similarity: a question in words no fact
    # uses still gets the closest facts, ranked by the same relevance, rather than nothing.
    semantic_min_results: int = Field(default=5, ge=0)
    rrf_k: int = Field(default=60, ge=0)
    # The fused candidates that are hydrated, reranked and packed. 200, not the reference's
    # 300: the same LoCoMo Rt@10, A@1024 0.002 lower, and 10-15 % less CPU per recall, since
    # every later stage and the hydration's passage reads scale with it (docs/benchmarks.md).
    rerank_max_candidates: int = Field(default=200, ge=1)
    # Divisor applied to an arm's ranks before fusion: >1 favours the arm, <1 demotes it.
    arm_boosts: dict[Arm, _Divisor] = Field(default_factory=dict)

    recency_alpha: float = Field(default=0.2, ge=0.0, le=_MAX_ALPHA)
    # The recency weight of a question that does not ask about now or lately
    # (recall/asked_when.py): when it was said is no evidence of what answers "What did Caroline
    # do at the support group?". Recency then only breaks near-ties (identical facts).
    recency_alpha_unasked: float = Field(default=0.02, ge=0.0, le=_MAX_ALPHA)
    # What recency dates a memory by. "known": the latest of when it happened and when it was
    # said, so "I moved to Porto in 2022", said today, is as fresh as "I work at a bakery",
    # said in the same breath; "happened" dates it by the event alone (falling back to when it
    # was said), which ranks every dated fact below an undated one told at the same moment.
    recency_from: Literal["known", "happened"] = "known"
    # The recency signal falls linearly from 1.0 (dated now) to the floor over the horizon.
    recency_horizon_days: float = Field(default=365.0, gt=0.0, allow_inf_nan=False)
    recency_floor: float = Field(default=0.1, ge=0.0, le=1.0)
    temporal_alpha: float = Field(default=0.2, ge=0.0, le=_MAX_ALPHA)
    proof_alpha: float = Field(default=0.1, ge=0.0, le=_MAX_ALPHA)

    # The query vector blends the question as asked (this weight) with the question without the
    # names in at least `ubiquitous_share` of the bank's facts: 1.0 = the question as asked.
    query_as_asked_weight: float = Field(default=0.5, gt=0.0, le=1.0)
    ubiquitous_share: float = Field(default=0.25, gt=0.0, le=1.0)
    # BM25 here counts document frequency over the matching facts only, so a ubiquitous name
    # makes nearly the whole bank a candidate without telling any of it apart: leave it out.
    keyword_without_names: bool = True

    rerank: bool = True
    rerank_batch_size: int = Field(default=32, ge=1)
    # Relevance without a cross-encoder: the query-fact cosine, plus `keyword_weight` times
    # the fact's keyword coverage (its BM25 over a full match's: how much of the question its
    # words cover; lexical evidence on the same footing for every candidate, however it was
    # found). Coverage at 0.5 measured as the best-match ratio at 0.25 did on LoCoMo and the
    # held-out set, and +0.02-0.03 P@1 on small banks, where the best match is often one
    # common word. "fused" spreads the fused (RRF) scores instead, which measure agreement
    # between arms, not relevance.
    relevance: Literal["cosine", "fused"] = "cosine"
    keyword_weight: float = Field(default=0.5, ge=0.0)
    # Relevance without a cross-encoder reads no grammar: "Kwame's brother Kojo lives in
    # Accra" matches "Where does Kwame live?" as well as Kwame's own facts do. A fact that
    # opens with a relative of the person the question asks about is about that relative
    # (recall/subject.py), and its relevance is multiplied by this; 1 = off.
    other_subject_factor: float = Field(default=0.8, gt=0.0, le=1.0)
    # Whether such a fact keeps its keyword evidence. Off: every word after "Kwame's brother
    # Kojo" is said of Kojo, so a question word it matches ("Where does Kwame live?" against
    # "... lives in Accra") is evidence about the relative, not about the person asked.
    other_subject_keyword: bool = False
    # A fact amid talk about the question is likelier to answer it than the same words amid
    # other talk ("It was great, the kids loved it" after a turn about the pottery class).
    # Relevance is blended with the best relevance among the candidates from its passage: its
    # own turns and the `passage_turns` before and after each in the same conversation
    # (recall/passages.py). On LoCoMo and the held-out set every width from 1 to 8 turns and
    # every weight from 0.2 to 0.5 measured +0.02 to +0.05 Rt@10 (docs/benchmarks.md, "Recall
    # quality, stop 16"); 0 = off. A bank of one-statement conversations has no passages.
    passage_weight: float = Field(default=0.35, ge=0.0, lt=1.0)
    passage_turns: int = Field(default=2, ge=0)
    # BM25 learns that a word is common only from the bank's facts: in a bank of ten, "live"
    # and "Kojo" each occur once and weigh the same. Each query lexeme is also weighed by how
    # common it is in general English (recall/word_prior.py), as the chance that a fact of
    # `keyword_prior_fact_words` words holds it: a word at most as common as Zipf
    # `keyword_prior_rare_zipf` (once per million words: "pastry", most names) counts in
    # full, a commoner one by its information relative to that ("live" ~0.4, "have" ~0.16).
    # The bank's own frequencies take over as it grows: they get N / (N + keyword_prior_facts)
    # of the weight, general English the rest; 0 = plain BM25.
    keyword_prior_facts: int = Field(default=100, ge=0)
    keyword_prior_fact_words: int = Field(default=20, ge=1)  # a fact: a sentence or two
    keyword_prior_rare_zipf: float = Field(default=3.0, gt=0.0, lt=9.0)

    # mpfp measured better than bfs on LoCoMo's strict metrics (Rt@10 0.722 vs 0.710, A@1024
    # 0.703 vs 0.697), at a higher latency; a request or the bank's config may choose.
    graph_retriever: GraphRetrieverName = "mpfp"
    graph_seed_count: int = Field(default=20, ge=1)  # top semantic hits the graph expands from
    graph_entity_weight: float = Field(default=0.5, gt=0.0)  # inside tanh(shared * weight)
    graph_semantic_link_min: float = Field(default=0.7, ge=0.0, le=1.0)
    graph_causal_boost: float = Field(default=2.0, gt=0.0)
    # Activation kept across one hop: a neighbour must be reached by strong evidence to
    # outrank the seed it spreads from.
    graph_hop_decay: float = Field(default=0.5, gt=0.0, le=1.0)
    # Seeds are the semantic arm's own top hits: listing them again in the graph arm gives
    # semantic matches a second vote in the fusion.
    graph_include_seeds: bool = False

    # Meta-path forward push: share of mass a node keeps per hop, mass below which a node is
    # dropped, neighbours followed per node and edge type, lightest edge loaded.
    mpfp_alpha: float = Field(default=0.15, gt=0.0, lt=1.0)
    mpfp_threshold: float = Field(default=1e-6, gt=0.0, lt=1.0)
    mpfp_top_k: int = Field(default=20, ge=1)
    mpfp_min_edge_weight: float = Field(default=0.1, ge=0.0, le=1.0)
    # Unlike bfs, mpfp ranks its seeds too (as the reference does): without them its ranking
    # is the seeds' neighbours alone, which measured far worse (Rt@10 0.60 against 0.71).
    mpfp_include_seeds: bool = True
    # A walk does not pass through an entity named in more than this share of the bank's facts
    # (and this many): a hub fans the mass out over facts that share nothing else. A bound on
    # the walk's width, far below where a name stops telling facts apart (ubiquitous_share).
    mpfp_hub_share: float = Field(default=0.05, gt=0.0, le=1.0)
    mpfp_hub_min_mentions: int = Field(default=20, ge=1)

    temporal_buckets: int = Field(default=10, ge=1)  # slices of the window for spreading
    # Facts whose sources are all cited by better-ranked facts move behind the rest, and
    # with `demote_covered` "repeats" only those that also say nothing new (every sentence in
    # a fact above). A turn is split into facts of a sentence or two, and the one that
    # matches the question is often not the one that answers it ("This necklace is super
    # special to me" / "it stands for love, faith and strength"): the second cites a turn
    # already shown, yet it is new text. "sources" demotes every covered fact (before stop
    # 18: LoCoMo A@1024 0.737 against 0.789, docs/benchmarks.md "Recall quality, stop 18").
    diversify_sources: bool = True
    demote_covered: Literal["sources", "repeats"] = "repeats"
    # Packing: a fact that quotes a packed one of fewer sources (an exchange, after the fact
    # of one of its turns) takes that one's place, and is packed as the fact of its other turn
    # when its first is shown (recall/packing.py). Off: sentence-once packing already leaves
    # the quoted sentences out, and taking a better-ranked place pulls the exchange's other
    # turn up the ranking ahead of better evidence (LoCoMo Rt@10 0.780 on, 0.795 off).
    pack_absorbs_quotes: bool = False
    # Maximal marginal relevance over the top `mmr_top` results: 1.0 = off.
    mmr_weight: float = Field(default=0.5, gt=0.0, le=1.0)
    mmr_top: int = Field(default=30, ge=2)
    # A sentence is packed once: a fact whose sentences a better-ranked packed fact already
    # showed is shown (and charged) without them (recall/packing.py). The two exchanges of a
    # turn both quote it; without this the budget pays for that turn twice.
    pack_sentences_once: bool = True
    # Fused results considered for token packing, as a multiple of the budget limit.
    packing_pool_factor: int = Field(default=2, ge=1)
    default_max_tokens: int = Field(default=4096, ge=1)

    # ── where the arms look, and how far ──
    # A name is ubiquitous (a conversation's speakers, a personal bank's owner) when its
    # entity is in at least `ubiquitous_share` of the bank's facts and in at least this many:
    # it then tells no fact apart. The one rule for the query vector, the keyword query and
    # the graph's entity links.
    ubiquitous_min_mentions: int = Field(default=3, ge=1)
    # A short index scan on a bank up to this size is retried exactly; beyond it the cost of
    # a full scan outweighs the rows a filtered HNSW pass may have missed.
    exact_fallback_max_units: int = Field(default=200_000, ge=0)
    # HNSW ef_search = the limit, within these. On graphs built at ef_construction 128 one
    # question of 60 in a 100k bank fell into a wrong region at 300 (0.06 of the exact top 50),
    # and the floor was 500. On ef_construction 256 graphs (store/vector_indexes.py) eight
    # builds kept every question at 0.98 or more at 300 (1.00 at 500), and 300 took the 100k
    # recall from 58 to 46 ms p50, alternated per question (docs/benchmarks.md, "Stop 31").
    ef_search_min: int = Field(default=300, ge=1)
    ef_search_max: int = Field(default=1000, ge=1)
    keyword_max_terms: int = Field(default=64, ge=1)  # query words and their inflections
    # A bank with keyword statistics scores the facts of its rarest query terms, up to this
    # many, instead of every fact sharing a word with the query (store/recall.py).
    keyword_max_candidates: int = Field(default=4000, ge=1)
    # Then the facts that could still beat the k-th score, k = keyword_proven_top, from each
    # other term's largest possible share (MaxScore, store/keyword_bound.py): that top k is the
    # one of scoring every match. Proving all 300 of budget mid cost +10 ms at the median, +16
    # at p95 (100k bank). Off: the rarest terms' facts only, a cut without a proof (stop 15).
    keyword_maxscore: bool = True
    keyword_proven_top: int = Field(default=50, ge=1)
    graph_seed_min_similarity: float = Field(default=0.5, ge=-1.0, le=1.0)
    # How close a fact must be to "<event>" in "before <event>" to date it, and how far back
    # "before <event>" reaches (a year, the horizon of the recency signal).
    event_anchor_min_similarity: float = Field(default=0.5, ge=-1.0, le=1.0)
    event_before_days: float = Field(default=365.0, gt=0.0)

    @model_validator(mode="after")
    def _needs_an_arm(self) -> RecallConfig:
        if not self.enabled_arms():
            raise ValueError("at least one retrieval arm must be enabled")
        unknown = sorted(set(self.arm_boosts) - set(ARMS))
        if unknown:
            raise ValueError(f"arm_boosts names unknown arms {unknown}; arms are {list(ARMS)}")
        return self

    def enabled_arms(self) -> tuple[Arm, ...]:
        """Enabled arms in canonical order."""
        return tuple(arm for arm in ARMS if getattr(self, arm))

    def arm_boost(self, arm: Arm) -> float:
        return self.arm_boosts.get(arm, 1.0)


ARMS: tuple[Arm, ...] = tuple(
    name
    for name, info in RecallConfig.model_fields.items()
    if isinstance(info.json_schema_extra, dict) and info.json_schema_extra.get(_ARM_SWITCH)
)


def _only(*arms: Arm) -> RecallConfig:
    return RecallConfig.model_validate({arm: arm in arms for arm in ARMS})


# Semantic, keyword and temporal arms, RRF, rerank, all three boosts. No graph arm: neither
# retriever beat leaving it out on LoCoMo's strict metrics (docs/benchmarks.md, "Graph arm").
_DEFAULT_CHANGES: dict[str, Any] = {"graph": False}


def _default_with(**changes: Any) -> RecallConfig:
    """The default with one concern changed, so that an ablation measures that concern alone
    (built from RecallConfig(), whose graph arm is on, the ablations measured graph + change)."""
    return RecallConfig(**{**_DEFAULT_CHANGES, **changes})


PRESETS: dict[str, RecallConfig] = {
    "default": _default_with(),
    # The default with the graph arm (graph_retriever mpfp; bfs per request or bank config).
    "graph": _default_with(graph=True),
    # The default, by the name of what it leaves out (the knowledge graph's link expansion).
    "no-graph": _default_with(),
    # Drops the time-window arm; temporal queries then rely on the other arms alone.
    "no-temporal": _default_with(temporal=False),
    # Drops BM25; exposes how often exact names/terms rescue a query.
    "no-keyword": _default_with(keyword=False),
    # Keeps fusion order, scores with synthetic RRF-rank scores instead of a cross-encoder.
    "no-rerank": _default_with(rerank=False, relevance="fused"),
    # Each fact scored alone, without the relevance of the turns around it.
    "no-passage": _default_with(passage_weight=0.0),
    # Plain ranking: no MMR, and facts repeating already-shown sources keep their place.
    "no-diversity": _default_with(diversify_sources=False, mmr_weight=1.0),
    # Names in most facts count like any word: in the query vector and in the keyword query.
    "no-name-blend": _default_with(query_as_asked_weight=1.0, keyword_without_names=False),
    # The default with the keyword cut of big banks before stop 16 (the rarest terms' facts
    # only, no proof), for side-by-side benchmarks.
    "unproven-keyword-cut": _default_with(keyword_maxscore=False),
    # The default reranking the reference system's 300 fused candidates instead of 200: on
    # LoCoMo +0.002 A@1024 for ~10-15 % more CPU per recall (docs/benchmarks.md, stop 29).
    "rerank-300": _default_with(rerank_max_candidates=300),
    # The default scanning a big bank's HNSW graph at ef_search 500 at least, the floor before
    # ef_construction 256 (stop 31), for side-by-side benchmarks.
    "ef-500": _default_with(ef_search_min=500),
    # Dense-vector baseline with the reranker on top.
    "semantic-only": _only("semantic"),
    # Lexical baseline with the reranker on top.
    "keyword-only": _only("keyword"),
}


def get_preset(name: str) -> RecallConfig:
    """A private copy of a named preset; unknown names list the valid ones."""
    try:
        preset = PRESETS[name]
    except KeyError:
        raise KeyError(f"unknown recall preset {name!r}; choose from {sorted(PRESETS)}") from None
    return preset.model_copy(deep=True)


def budget_to_limit(budget: Budget) -> int:
    """Per-arm candidate limit (search depth) for a budget level."""
    try:
        return BUDGET_LIMITS[budget]
    except KeyError:
        raise ValueError(f"budget must be one of {list(BUDGET_LIMITS)}, got {budget!r}") from None
