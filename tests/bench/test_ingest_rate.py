"""The ingest bench's guard: a digest comparison that tells a changed fact or link apart."""

from __future__ import annotations

from bench.ingest_rate import digest_diff

_A = "00000000-0000-0000-0000-00000000000a"
_B = "00000000-0000-0000-0000-00000000000b"
_C = "00000000-0000-0000-0000-00000000000c"


def test_the_same_digest_differs_nowhere() -> None:
    digest = {"facts": [[_A, "Alice has a cat."]], "links": [[_A, _B, "semantic", 0.8]]}
    assert set(digest_diff(digest, digest).values()) == {0}


def test_a_reworded_fact_a_new_link_and_a_reweighted_link_are_counted() -> None:
    before = {
        "facts": [[_A, "Alice has a cat."], [_B, "Bob has a dog."]],
        "links": [[_A, _B, "semantic", 0.8], [_A, _C, "temporal", 0.5]],
    }
    after = {
        "facts": [[_A, "Alice has two cats."], [_B, "Bob has a dog."]],
        "links": [[_A, _B, "semantic", 0.9], [_A, _C, "temporal", 0.5], [_B, _C, "entity", 0.75]],
    }
    assert digest_diff(before, after) == {
        "facts_missing": 1,
        "facts_extra": 1,
        "links_missing": 1,
        "links_extra": 2,
        "link_pairs_missing": 0,
        "link_pairs_extra": 1,
    }
