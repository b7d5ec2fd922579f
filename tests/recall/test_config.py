from __future__ import annotations

import pytest
from pydantic import ValidationError

from tempr.recall_api.recall.config import (
    ARMS,
    PRESETS,
    RecallConfig,
    budget_to_limit,
    get_preset,
)

EXPECTED_PRESETS = {
    "default",
    "graph",
    "no-name-blend",
    "no-graph",
    "no-temporal",
    "no-keyword",
    "no-rerank",
    "no-diversity",
    "no-passage",
    "semantic-only",
    "keyword-only",
    "unproven-keyword-cut",
    "rerank-300",
    "ef-500",
}


def test_defaults_follow_the_pipeline_constants() -> None:
    cfg = RecallConfig()
    assert cfg.enabled_arms() == ARMS
    assert cfg.semantic_threshold == 0.3
    assert cfg.rrf_k == 60
    assert cfg.rerank_max_candidates == 200
    assert cfg.arm_boosts == {}
    assert (cfg.recency_alpha, cfg.temporal_alpha, cfg.proof_alpha) == (0.2, 0.2, 0.1)
    assert cfg.rerank is True
    assert cfg.graph_entity_weight == 0.5
    assert cfg.graph_causal_boost == 2.0
    assert (cfg.graph_hop_decay, cfg.graph_include_seeds) == (0.5, False)
    assert (cfg.diversify_sources, cfg.demote_covered, cfg.pack_absorbs_quotes) == (True, "repeats", False)
    assert (cfg.mmr_weight, cfg.mmr_top) == (0.5, 30)
    assert (cfg.query_as_asked_weight, cfg.ubiquitous_share) == (0.5, 0.25)
    assert cfg.ubiquitous_min_mentions == 3
    assert cfg.relevance == "cosine"
    assert (cfg.ef_search_min, cfg.ef_search_max, cfg.keyword_max_terms) == (300, 1000, 64)
    assert (cfg.graph_seed_min_similarity, cfg.event_anchor_min_similarity) == (0.5, 0.5)
    assert (cfg.exact_fallback_max_units, cfg.event_before_days) == (200_000, 365.0)


def test_no_rerank_keeps_the_fused_order_as_relevance() -> None:
    assert PRESETS["no-rerank"].relevance == "fused"
    assert all(cfg.relevance == "cosine" for name, cfg in PRESETS.items() if name != "no-rerank")


def test_all_named_presets_exist_and_are_valid() -> None:
    assert set(PRESETS) == EXPECTED_PRESETS
    for cfg in PRESETS.values():
        RecallConfig.model_validate(cfg.model_dump())


@pytest.mark.parametrize(
    ("name", "arms", "rerank"),
    [
        ("default", ("semantic", "keyword", "temporal"), True),
        ("graph", ("semantic", "keyword", "graph", "temporal"), True),
        ("no-graph", ("semantic", "keyword", "temporal"), True),
        ("no-temporal", ("semantic", "keyword"), True),
        ("no-keyword", ("semantic", "temporal"), True),
        ("no-rerank", ("semantic", "keyword", "temporal"), False),
        ("semantic-only", ("semantic",), True),
        ("keyword-only", ("keyword",), True),
    ],
)
def test_preset_shapes(name: str, arms: tuple[str, ...], rerank: bool) -> None:
    cfg = PRESETS[name]
    assert cfg.enabled_arms() == arms
    assert cfg.rerank is rerank


# What each ablation leaves out of the default, and nothing else.
ABLATIONS = {
    "graph": {"graph"},
    "no-temporal": {"temporal"},
    "no-keyword": {"keyword"},
    "no-rerank": {"rerank", "relevance"},
    "no-passage": {"passage_weight"},
    "no-diversity": {"diversify_sources", "mmr_weight"},
    "no-name-blend": {"query_as_asked_weight", "keyword_without_names"},
    "unproven-keyword-cut": {"keyword_maxscore"},
    "rerank-300": {"rerank_max_candidates"},
    "ef-500": {"ef_search_min"},
}


@pytest.mark.parametrize(("name", "fields"), sorted(ABLATIONS.items()))
def test_an_ablation_is_the_default_with_one_concern_changed(name: str, fields: set[str]) -> None:
    default = PRESETS["default"].model_dump()
    preset = PRESETS[name].model_dump()
    assert {key for key in default if preset[key] != default[key]} == fields
    assert PRESETS["no-graph"] == PRESETS["default"]


def test_get_preset_returns_an_independent_copy() -> None:
    cfg = get_preset("default")
    assert cfg == PRESETS["default"]
    cfg.arm_boosts["graph"] = 3.0
    assert PRESETS["default"].arm_boosts == {}


def test_unknown_preset_lists_choices() -> None:
    with pytest.raises(KeyError, match="semantic-only"):
        get_preset("everything")


def test_config_is_frozen() -> None:
    with pytest.raises(ValidationError):
        RecallConfig().rrf_k = 10  # type: ignore[misc]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"semantic": False, "keyword": False, "graph": False, "temporal": False},
        {"arm_boosts": {"graph": 0.0}},
        {"arm_boosts": {"graph": float("inf")}},
        {"arm_boosts": {"unknown-arm": 2.0}},
        {"rerank_max_candidates": 0},
        {"recency_alpha": -0.1},
        {"proof_alpha": 2.5},
        {"no_such_field": 1},
    ],
)
def test_invalid_configs_are_rejected(kwargs: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        RecallConfig(**kwargs)


def test_arm_boost_defaults_to_neutral() -> None:
    cfg = RecallConfig(arm_boosts={"graph": 2.0})
    assert cfg.arm_boost("graph") == 2.0
    assert cfg.arm_boost("semantic") == 1.0


@pytest.mark.parametrize(("budget", "limit"), [("low", 100), ("mid", 300), ("high", 1000)])
def test_budget_to_limit(budget: str, limit: int) -> None:
    assert budget_to_limit(budget) == limit  # type: ignore[arg-type]


def test_unknown_budget_is_rejected() -> None:
    with pytest.raises(ValueError, match="low"):
        budget_to_limit("max")  # type: ignore[arg-type]


def test_a_graph_retriever_choice_switches_the_arm_on_in_the_default_preset_only() -> None:
    from tempr.recall_api.recall.arms.graph import with_graph_choice

    default, graph, no_graph = PRESETS["default"], PRESETS["graph"], PRESETS["no-graph"]
    assert default.graph is False and graph.graph_retriever == "mpfp"
    assert with_graph_choice(default, None, "default") is default
    chosen = with_graph_choice(default, "mpfp", "default")
    assert (chosen.graph, chosen.graph_retriever) == (True, "mpfp")
    assert with_graph_choice(graph, "bfs", "graph").graph_retriever == "bfs"
    assert with_graph_choice(no_graph, "mpfp", "no-graph").graph is False  # the preset says no
    assert (RecallConfig().mpfp_alpha, RecallConfig().mpfp_threshold, RecallConfig().mpfp_top_k) == (
        0.15,
        1e-6,
        20,
    )


def test_the_request_s_graph_retriever_wins_over_the_bank_s_and_an_unknown_stored_one_is_ignored() -> None:
    from tempr.recall_api.recall.arms.graph import graph_choice

    assert graph_choice("bfs", "mpfp") == "bfs"
    assert graph_choice(None, "mpfp") == "mpfp"
    assert graph_choice(None, "pagerank") is None  # a bank config written before a rename
    assert graph_choice(None, None) is None
