"""Entity mentions: NER + capitalized heuristics, with and without spaCy."""

from __future__ import annotations

import pytest

from tempr.agents.extraction import entities as ent
from tempr.agents.extraction.entities import find_entities

SPEAKERS = ("Caroline", "Melanie")


def _pairs(text: str, speakers: tuple[str, ...] = SPEAKERS) -> dict[str, str]:
    return {m.name: m.kind for m in find_entities(text, known_speakers=speakers)}


@pytest.fixture(params=["spacy", "heuristics"])
def mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "heuristics":
        monkeypatch.setattr(ent, "get_nlp", lambda: None)
    elif ent.get_nlp() is None:
        pytest.skip("spaCy model not loadable here")
    return str(request.param)


def test_speakers_are_always_people(mode: str) -> None:
    found = _pairs("I told caroline about it, and Melanie agreed.")
    assert found.get("Caroline") == "person"
    assert found.get("Melanie") == "person"


def test_multiword_names_and_connectors(mode: str) -> None:
    found = _pairs("Yesterday we visited the Museum of Modern Art in New York.")
    assert "Museum of Modern Art" in found
    assert "New York" in found


def test_greetings_and_sentence_starts_are_not_entities(mode: str) -> None:
    assert _pairs("Hi! Thanks! Good to see you. Wow, cool. lol") == {}


def test_pronouns_days_and_months_are_not_entities(mode: str) -> None:
    found = _pairs("I think I will go on Monday or in May, and you?")
    assert not {"I", "Monday", "May", "You"} & set(found)


def test_deduplicated_case_insensitively(mode: str) -> None:
    mentions = find_entities("Paris is lovely. I love PARIS and paris.", known_speakers=())
    names = [m.name.lower() for m in mentions]
    assert names.count("paris") == 1


def test_nickname_of_a_speaker_is_the_speaker(mode: str) -> None:
    found = _pairs("Thanks, Mel! You are the best.")
    assert found.get("Melanie") == "person"
    assert "Mel" not in found


def test_ner_kinds_are_mapped() -> None:
    if ent.get_nlp() is None:
        pytest.skip("spaCy model not loadable here")
    found = _pairs("Amy Ellis Nutt studied at Stanford University in California.")
    assert found.get("Amy Ellis Nutt") == "person"
    assert found.get("Stanford University") == "org"
    assert found.get("California") == "location"
    assert set(found.values()) <= {
        "person",
        "org",
        "location",
        "product",
        "concept",
        "event",
        "other",
    }


def test_acronym_is_kept(mode: str) -> None:
    assert "LGBTQ" in _pairs("I went to a LGBTQ support group yesterday.")


def test_empty_text() -> None:
    assert find_entities("") == []
