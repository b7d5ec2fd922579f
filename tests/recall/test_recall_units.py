"""Pure parts of recall: the keyword query, the filter compiler, the window, the request model."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from tempr.recall_api.recall.arms.keyword import keyword_or_query
from tempr.recall_api.recall.inflections import word_forms
from tempr.recall_api.recall.temporal import query_window
from tempr.schemas.recall import RecallRequest
from tempr.settings import get_settings
from tempr.store.recall import RecallFilters, compile_filters

REF = datetime(2024, 7, 15, 12, tzinfo=UTC)


def test_keyword_query_ors_the_words_and_drops_syntax() -> None:
    assert keyword_or_query('What did "Caroline" do -at the group?') == (
        "what or did or caroline or do or at or the or group or groups or grouped or grouping"
    )
    assert keyword_or_query("cats OR dogs or cats").startswith("cats or dogs or cat or ")
    assert keyword_or_query("??? \"' !") == ""
    assert keyword_or_query("🦜") == ""


def test_keyword_query_adds_irregular_forms_after_the_words() -> None:
    terms = keyword_or_query("What has Melanie bought for the children?").split(" or ")
    assert terms[:7] == ["what", "has", "melanie", "bought", "for", "the", "children"]
    assert {"buy", "buying", "child"} <= set(terms[7:])
    assert "melanie" not in terms[7:]  # names are not in the lexicon
    assert not {"do", "does", "done", "have"} & set(terms)  # stop words are not expanded


def test_word_forms() -> None:
    assert set(word_forms("went")) >= {"go", "goes", "going", "gone"}
    assert "went" not in word_forms("went")
    assert "mice" in word_forms("mouse")
    assert word_forms("zorblatt") == ()
    assert word_forms("did") == ()


def test_keyword_query_caps_terms() -> None:
    assert keyword_or_query(" ".join(f"w{i}" for i in range(500))).count(" or ") == 63
    assert keyword_or_query(" ".join(f"w{i}" for i in range(500)), max_terms=5).count(" or ") == 4


def test_filters_compile_to_bound_fragments() -> None:
    f = RecallFilters(
        types=["world"],
        tags=["a", "b"],
        tags_match="all_strict",
        window_start=REF,
        window_end=REF,
    )
    where, params = compile_filters(f, 4)
    assert where == (
        " AND u.fact_type = ANY($4::text[]) AND u.tags @> $5::text[]"
        " AND coalesce(u.occurred_end, u.occurred_start, u.mentioned_at) >= $6::timestamptz"
        " AND coalesce(u.occurred_start, u.mentioned_at) <= $7::timestamptz"
    )
    assert params == [["world"], ["a", "b"], REF, REF]


@pytest.mark.parametrize(
    ("mode", "clause"),
    [
        ("any", "(cardinality(x.tags) = 0 OR x.tags && $1::text[])"),
        ("all", "(cardinality(x.tags) = 0 OR x.tags @> $1::text[])"),
        ("any_strict", "x.tags && $1::text[]"),
        ("all_strict", "x.tags @> $1::text[]"),
        ("exact", "(x.tags @> $1::text[] AND x.tags <@ $1::text[])"),
    ],
)
def test_tag_modes(mode: str, clause: str) -> None:
    assert compile_filters(RecallFilters(tags=["t"], tags_match=mode), 1, "x") == (f" AND {clause}", [["t"]])


def test_no_filters_compile_to_nothing() -> None:
    assert compile_filters(RecallFilters(), 3) == ("", [])
    assert compile_filters(RecallFilters(tags=[]), 3) == ("", [])


def test_query_window() -> None:
    w = query_window("What did I do last spring?", REF)
    assert w is not None
    assert (w.start, w.end.date()) == (datetime(2024, 3, 1, tzinfo=UTC), datetime(2024, 5, 31).date())
    assert w.start < w.center < w.end
    assert query_window("What sports do I like?", REF) is None


def test_request_defaults_and_limits() -> None:
    req = RecallRequest(query="x")
    assert (req.budget, req.max_tokens, req.tags_match, req.preset) == ("mid", 4096, "any", "default")
    assert (req.include.chunks, req.include.max_chunk_tokens, req.include.entities) == (False, 8192, False)
    for bad in (
        {"query": ""},
        {"query": "x" * (get_settings().max_query_chars + 1)},
        {"query": "x", "max_tokens": 0},
        {"query": "x", "types": ["fact"]},
        {"query": "x", "query_timestamp": "2024-01-01T00:00:00"},
        {"query": "x", "unknown": 1},
        {"query": "x", "tags_match": "some"},
    ):
        with pytest.raises(ValidationError):
            RecallRequest.model_validate(bad)


def test_event_anchor_and_anchored_window() -> None:
    from tempr.recall_api.recall.temporal import anchored_window, event_anchor

    anchor = event_anchor("What did Alice do before she joined Google?")
    assert anchor is not None and (anchor.direction, anchor.event) == ("before", "she joined Google")
    assert event_anchor("What has Jon done since losing his job?").direction == "after"  # type: ignore[union-attr]
    assert event_anchor("When did Caroline go to the support group?") is None
    when = datetime(2023, 6, 1, tzinfo=UTC)
    w = anchored_window(anchor, when, REF)
    assert (w.start, w.end) == (datetime(2022, 6, 1, tzinfo=UTC), when)
    after = anchored_window(event_anchor("after the move"), when, REF)  # type: ignore[arg-type]
    assert after.start == when and after.end == max(REF, when)
    month = anchored_window(anchor, when, REF, before_days=30)
    assert (month.start, month.end) == (datetime(2023, 5, 2, tzinfo=UTC), when)
