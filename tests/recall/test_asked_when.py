"""Recency weighs in when the question asks about now or lately, and only breaks ties otherwise."""

import pytest

from tempr.recall_api.recall.asked_when import asks_about_now, with_recency_for
from tempr.recall_api.recall.config import RecallConfig
from tempr.recall_api.recall.scoring import boost


@pytest.mark.parametrize(
    ("query", "now"),
    [
        ("Where does Dana live now?", True),
        ("What book is Jon currently reading?", True),
        ("What did Melanie paint recently?", True),
        ("Is Kwame still at the bakery?", True),
        ("What is her current job?", True),
        ("Does Amara play chess these days?", True),
        ("What did Caroline do at the support group?", False),
        ("When did Melanie run the charity race?", False),
        ("What activities does Melanie partake in?", False),
        # Words that only contain a marker.
        ("Who won the snowball fight?", False),
        ("What currency does Tomasz save in?", False),
    ],
)
def test_a_question_that_asks_about_now(query: str, now: bool) -> None:
    assert asks_about_now(query) is now


def test_recency_weight_follows_the_question() -> None:
    cfg = RecallConfig()
    assert with_recency_for(cfg, "Where does Dana live now?").recency_alpha == cfg.recency_alpha
    unasked = with_recency_for(cfg, "What did Dana bake for the fair?")
    assert unasked.recency_alpha == cfg.recency_alpha_unasked < cfg.recency_alpha
    assert unasked.model_copy(update={"recency_alpha": cfg.recency_alpha}) == cfg  # nothing else moves
    # Unasked, recency still breaks a tie between identical facts, but cannot outrank a
    # clearly better match said a year earlier.
    fresh, old = boost(1.0, unasked.recency_alpha), boost(0.1, unasked.recency_alpha)
    assert fresh > old
    assert 0.60 * old > 0.58 * fresh
    asked_fresh, asked_old = boost(1.0, cfg.recency_alpha), boost(0.1, cfg.recency_alpha)
    assert 0.60 * asked_old < 0.58 * asked_fresh
