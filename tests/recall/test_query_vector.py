"""The query without ubiquitous names, and the blend of the two vectors."""

from __future__ import annotations

import numpy as np
import pytest

from tempr.recall_api.recall.query_vector import blend, strip_names, without_names


@pytest.mark.parametrize(
    ("query", "names", "expected"),
    [
        ("What has Melanie bought?", ["Melanie"], "What has bought?"),
        ("What do Melanie's kids like?", ["Melanie"], "What do kids like?"),
        ("what did melanie and Caroline do?", ["Melanie", "Caroline"], "what did and do?"),
        ("Did Mel tell Melanie?", ["Mel", "Melanie"], "Did tell ?"),  # longer name first
        ("Where is Melbourne?", ["Mel"], None),  # whole words only
        ("What did Jon buy?", ["Melanie"], None),  # no name in it
        ("Melanie?", ["Melanie"], None),  # nothing left to ask
        ("Who is   Melanie?", [""], None),
    ],
)
def test_without_names(query: str, names: list[str], expected: str | None) -> None:
    assert without_names(query, names) == expected


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("What has Melanie bought?", "What has bought?"),
        ("What did Jon buy?", "What did Jon buy?"),  # no name in it: unchanged
        ("Melanie's?", "?"),  # the keyword query then finds no word to search for
    ],
)
def test_strip_names_for_the_keyword_query(query: str, expected: str) -> None:
    assert strip_names(query, ["Melanie"]) == expected


def test_blend_is_a_unit_vector_between_the_two() -> None:
    asked = np.array([1.0, 0.0], dtype=np.float32)
    without = np.array([0.0, 1.0], dtype=np.float32)
    half = blend(asked, without, 0.5)
    assert np.linalg.norm(half) == pytest.approx(1.0)
    assert half == pytest.approx([2**-0.5, 2**-0.5])
    assert blend(asked, without, 1.0) == pytest.approx(asked)
    assert blend(asked, without, 0.8) @ asked > blend(asked, without, 0.5) @ asked
    assert blend(asked, -asked, 0.5) == pytest.approx(asked)  # opposite vectors: keep the question
