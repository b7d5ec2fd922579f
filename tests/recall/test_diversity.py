"""Provenance diversity: facts that only repeat shown sources move behind, in order."""

from __future__ import annotations

from recall_api.recall.diversity import demote_covered


def _run(items: list[tuple[str, list[str]]]) -> tuple[list[str], int]:
    ordered, demoted = demote_covered(items, lambda item: item[1])
    return [name for name, _ in ordered], demoted


def test_repeats_of_shown_sources_go_behind_in_their_order() -> None:
    items = [
        ("exchange", ["D1:1", "D1:2"]),
        ("turn-2", ["D1:2"]),
        ("other", ["D3:4"]),
        ("turn-1", ["D1:1"]),
        ("new-and-old", ["D1:1", "D5:5"]),
    ]
    assert _run(items) == (["exchange", "other", "new-and-old", "turn-2", "turn-1"], 2)


def test_a_fact_with_one_new_source_keeps_its_place() -> None:
    items = [("a", ["x"]), ("b", ["x", "y"]), ("c", ["y"]), ("d", ["z"])]
    assert _run(items) == (["a", "b", "d", "c"], 1)


def test_facts_without_sources_are_never_demoted() -> None:
    items = [("a", ["x"]), ("opinion", []), ("b", ["x"]), ("opinion-2", [])]
    assert _run(items) == (["a", "opinion", "opinion-2", "b"], 1)


def test_nothing_to_do() -> None:
    assert _run([]) == ([], 0)
    assert _run([("a", ["x"]), ("b", ["y"])]) == (["a", "b"], 0)
