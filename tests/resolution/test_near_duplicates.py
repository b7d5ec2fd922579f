"""The merge rule: a new fact folds into a stored one only when the texts say the same thing."""

from __future__ import annotations

import pytest

from tempr.agents.resolution.near_duplicates import same_statement

APART = [
    ("Ivo paid 120 euros for the new tyres.", "Ivo paid 450 euros for the new tyres."),
    ("Alice bought 3 apples at the market on Monday.", "Alice bought 4 apples at the market on Monday."),
    ("Alice bought two apples at the market.", "Alice bought three apples at the market."),
    ("Caroline went to a support group (7 May 2023).", "Caroline went to a support group (8 May 2023)."),
    ("Caroline moved to Lisbon in May 2023.", "Caroline moved to Lisbon in June 2023."),
    ("Caroline moved to Lisbon in 2022.", "Caroline moved to Lisbon in 2023."),
    ("Bob likes jazz.", "Alice likes jazz."),
    ("Bob met Alice in Porto.", "Bob met Maria in Porto."),
    ("Bob likes jazz.", "Bob does not like jazz."),
    ("Bob likes jazz.", "Bob doesn't like jazz."),
    ("Bob has a dog.", "Bob never had a dog."),
    ("The price rose to 1,000 euros.", "The price rose to 1,500 euros."),
]

SAME = [
    ("Ivo paid 120 euros for the new tyres.", "Ivo paid 120 euros for the new tyres."),
    ("Ivo paid 120 euros for the new tyres.", "ivo paid 120 euros for new tyres!"),
    ("Alice bought 3 apples at the market.", "Alice bought three apples at the market."),
    ("The price rose to 1,000 euros.", "The price rose to 1000 euros"),
    ("Bob doesn't like jazz.", "Bob does not like jazz."),
    ("On Monday Alice went to the market.", "Alice went to the market on Monday."),
]


@pytest.mark.parametrize(("a", "b"), APART)
def test_a_different_number_date_name_or_negation_stays_apart(a: str, b: str) -> None:
    assert not same_statement(a, b)
    assert not same_statement(b, a)


@pytest.mark.parametrize(("a", "b"), SAME)
def test_exact_and_trivially_reworded_repeats_merge(a: str, b: str) -> None:
    assert same_statement(a, b)
