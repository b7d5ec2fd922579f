"""The trace made readable, without a server: ranks, fates and the cut, bars."""

from __future__ import annotations

import uuid

import pytest
from pydantic import ValidationError
from starlette.datastructures import FormData

from tempr.recall_api.console.forms import bank_in, describe
from tempr.recall_api.console.trace_view import trace_ids, trace_view
from tempr.schemas.recall import RecallResponse

A, B, C = (str(uuid.uuid4()) for _ in range(3))


def _response(packed: list[str]) -> RecallResponse:
    trace = {
        "preset": "default",
        "temporal_window": None,
        "query_without_names": None,
        "arms": {
            "semantic": {"count": 3, "elapsed_ms": 4.0, "note": None,
                         "candidates": [{"id": A, "rank": 1, "score": 0.9}, {"id": B, "rank": 2, "score": 0.8},
                                        {"id": C, "rank": 3, "score": 0.1}]},
            "keyword": {"count": 1, "elapsed_ms": 2.0, "note": "bm25",
                        "candidates": [{"id": B, "rank": 1, "score": 3.2}]},
        },
        "fused": {"count": 3, "top": [{"id": B, "rrf": 0.0325, "arms": {"semantic": 2, "keyword": 1}},
                                      {"id": A, "rrf": 0.0164, "arms": {"semantic": 1}},
                                      {"id": C, "rrf": 0.0159, "arms": {"semantic": 3}}]},
        "rerank_prefilter": {"kept": 3, "dropped": 0, "cap": 300, "boosts": {}, "composition": {}},
        "rerank": {"method": "cosine+keyword", "scores": []},
        "boosts": [
            {"id": B, "rerank": 0.9, "recency": 1.0, "temporal": 1.0, "proof": 1.0, "arm": 1.0, "final": 0.9},
            {"id": A, "rerank": 0.7, "recency": 1.0, "temporal": 1.0, "proof": 1.0, "arm": 1.0, "final": 0.7},
            {"id": C, "rerank": 0.1, "recency": 1.0, "temporal": 1.0, "proof": 1.0, "arm": 1.0, "final": 0.1},
        ],
        "packing": {"considered": 2, "kept": len(packed), "skipped": [], "tokens": 12, "max_tokens": 20},
        "timings_ms": {"embed": 10.0, "arms": 20.0, "fusion": 1.0, "total": 31.0},
    }  # fmt: skip
    results = [
        {"id": i, "text": i, "fact_type": "world", "occurred_start": None, "occurred_end": None,
         "mentioned_at": None, "tags": [], "source_message_ids": [], "chunk_id": None,
         "scores": {"rrf": 0.0, "rerank": 0.0, "final": 0.0, "arms": {}}}
        for i in packed
    ]  # fmt: skip
    return RecallResponse.model_validate(
        {"bank_id": "b", "query": "q", "results": results, "tokens_used": 12,
         "budget": {"name": "low", "limit": 100}, "temporal_window": None, "trace": trace}
    )  # fmt: skip


def test_every_candidate_gets_its_ranks_its_fate_and_its_text() -> None:
    response = _response(packed=[B])
    assert trace_ids(response.trace or {}) == {A, B, C}
    view = trace_view(response, {A: "alpha", B: "beta", C: "gamma"})
    first, second, third = view.rows
    assert (first.text, first.fused_rank, first.arms, first.fate) == (
        "beta", 1, {"semantic": 2, "keyword": 1}, "packed",
    )  # fmt: skip
    assert (second.text, second.fused_rank, second.fate) == ("alpha", 2, "skipped")  # in the pool, not packed
    assert (third.text, third.fate) == ("gamma", "past the pool")  # behind the cut
    assert set(view.why) == {B}
    keyword = next(a for a in view.arms if a.arm == "keyword")
    assert keyword.candidates == [{"id": B, "rank": 1, "score": 3.2, "text": "beta", "packed": True}]


def test_timings_are_bars_relative_to_the_slowest_stage() -> None:
    view = trace_view(_response(packed=[B]), {})
    assert [(b.label, b.percent) for b in view.timings] == [("embed", 50.0), ("arms", 100.0), ("fusion", 5.0)]
    assert view.total_ms == 31.0


def test_the_profile_form_becomes_a_whole_profile_or_names_the_field() -> None:
    form = FormData([("name", "Rita"), ("background", "I review."), ("empathy", "5"), ("bias_strength", "0.7"),
                     ("reflect_budget", "high"), ("observations", "off"), ("form_opinions", "")])  # fmt: skip
    body = bank_in(form)
    assert body.name == "Rita" and body.disposition.empathy == 5 and body.disposition.skepticism == 3
    assert body.config.reflect_budget == "high" and body.config.observations is False
    assert body.config.form_opinions is None  # "server default"
    with pytest.raises(ValidationError) as exc:
        bank_in(FormData([("empathy", "9")]))
    assert describe(exc.value).startswith("disposition.empathy:")
