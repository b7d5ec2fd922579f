"""Pages whose data the keyed stack does not make (no LLM there): reflect's answer and an
opinion's history, rendered from the API's own models."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from tempr.recall_api.console.pages_reflect import chart_points
from tempr.recall_api.console.render import templates
from tempr.schemas.reflect import Opinion, OpinionChange, ReflectResponse

NOW = datetime(2024, 5, 1, tzinfo=UTC)
FACT = uuid.uuid4()


def _page(name: str, **values: Any) -> str:
    base = {"can": {"read": True, "write": True, "admin": False}, "csrf": "t", "csrf_field": "csrf",
            "hx_headers": "{}", "auth_required": True, "principal": None, "bank_id": "b", "section": ""}  # fmt: skip
    return templates.env.get_template(name).render(**base, **values)


def test_reflect_answer_lists_the_facts_used_and_opinions_formed() -> None:
    out = ReflectResponse.model_validate(
        {"bank_id": "b", "query": "Python?", "text": "I like Python for data work.",
         "based_on": [{"id": str(FACT), "fact_type": "world", "text": "Pandas is a Python library."}],
         "opinions_formed": [{"id": str(uuid.uuid4()), "text": "Python suits data science.", "confidence": 0.7,
                              "entities": ["Python"], "based_on": [str(FACT)]}],
         "usage": {"total_tokens": 321}}
    )  # fmt: skip
    html = _page("_reflect_result.html", out=out)
    assert "I like Python for data work." in html
    assert f"/console/banks/b/memories/{FACT}" in html and "Pandas is a Python library." in html
    assert "Python suits data science." in html and "confidence 0.70" in html
    assert "321 LLM tokens" in html


def test_an_opinion_shows_each_change_and_the_facts_that_moved_it() -> None:
    history = [
        OpinionChange(id=uuid.uuid4(), verdict="reinforce", previous_text="A", previous_confidence=0.5,
                      new_text="A", new_confidence=0.6, evidence_ids=[FACT], reasoning="more proof", created_at=NOW),
        OpinionChange(id=uuid.uuid4(), verdict="contradict", previous_text="A", previous_confidence=0.6,
                      new_text="B", new_confidence=0.3, evidence_ids=[], reasoning="it changed", created_at=NOW),
    ]  # fmt: skip
    opinion = Opinion(id=uuid.uuid4(), bank_id="b", text="B", confidence=0.3, entities=["X"], evidence_ids=[],
                      created_at=NOW, updated_at=NOW, history=history)  # fmt: skip
    points = chart_points(opinion.confidence, history)
    assert points == [(0, 0.5), (1, 0.6), (2, 0.3)]
    html = _page(
        "opinion.html", opinion=opinion, history=history, points=points, texts={FACT: "New evidence."}
    )
    assert html.count("<circle") == 3 and "0.50, 0.60, 0.30" in html  # the chart and its text alternative
    assert "reinforce" in html and "contradict" in html and "was: “A”" in html
    assert "New evidence." in html and "it changed" in html
