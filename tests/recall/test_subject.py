"""Whose fact it is: questions about a person against facts about their relatives."""

import uuid

import pytest

from tempr.recall_api.recall.arms.base import ArmHit, ArmResult
from tempr.recall_api.recall.config import RecallConfig
from tempr.recall_api.recall.fusion import Candidate
from tempr.recall_api.recall.pipeline import Scored, _rerank
from tempr.recall_api.recall.subject import asked_about, relative_of


@pytest.mark.parametrize(
    ("query", "names"),
    [
        ("Which city does Kwame live in now?", {"Kwame"}),
        ("Does Dana have pets?", {"Dana"}),
        ("What is Fatima's occupation?", {"Fatima"}),
        ("What is Amara putting money aside for?", {"Amara"}),
        ("Where does Mei Lin work?", {"Mei Lin"}),
        # The question itself is about a relative, or about ties: nobody to protect.
        ("What does Mei Lin's husband do?", set()),
        ("Is Kwame married?", set()),
        ("How many children does Melanie have?", set()),
        ("Does Dana have a sister?", set()),
        # The person is the object: "who" is the subject.
        ("Who calls Kwame every Sunday?", set()),
    ],
)
def test_the_subject_of_a_question(query: str, names: set[str]) -> None:
    assert asked_about(query) == frozenset(names)


@pytest.mark.parametrize(
    ("text", "owner"),
    [
        ("Kwame's brother Kojo lives in Accra.", "Kwame"),
        ("Rahul's twin sister Priya lives in Toronto with her husband.", "Rahul"),
        ("Melanie's kids are so excited about summer break!", "Melanie"),
        ("Caroline said to Melanie: Melanie's kids loved the beach.", "Melanie"),
        ("Mei Lin's husband is a pilot.", "Mei Lin"),
        # About the person themselves, or a thing of theirs, or a relative later in the fact.
        ("Kwame teaches chemistry; Kwame's brother Kojo is a nurse.", None),
        ("Kwame's favourite band is Bombay Bicycle Club.", None),
        ("Fatima is a pharmacist.", None),
    ],
)
def test_a_fact_that_opens_with_a_relative(text: str, owner: str | None) -> None:
    assert relative_of(text) == owner


def test_the_factor_is_off_at_one_and_never_promotes() -> None:
    assert RecallConfig(other_subject_factor=1.0).other_subject_factor == 1.0
    with pytest.raises(ValueError):
        RecallConfig(other_subject_factor=1.2)


def _scored(text: str, cosine: float) -> Scored:
    row = {"text": text, "cosine": cosine, "occurred_start": None, "mentioned_at": None}
    return Scored(Candidate(uuid.uuid4(), {"semantic": 1}), row)  # type: ignore[arg-type]


@pytest.mark.parametrize("factor", [1.0, 0.8])
async def test_relevance_demotes_the_relatives_fact_only(factor: float) -> None:
    brother = _scored("Kwame's brother Kojo lives in Accra.", 0.555)
    own = _scored("Kwame is renting a flat in Leeds.", 0.50)
    cfg = RecallConfig(other_subject_factor=factor)
    await _rerank(None, "Which city does Kwame live in now?", [brother, own], cfg, [])
    assert own.rerank == pytest.approx(0.50)
    assert brother.rerank == pytest.approx(0.555 * factor)
    # Asked about the brother, his fact keeps its relevance.
    await _rerank(None, "Where does Kwame's brother live?", [brother], cfg, [])
    assert brother.rerank == pytest.approx(0.555)


@pytest.mark.parametrize("keeps_keyword", [False, True])
async def test_the_relatives_clause_is_no_keyword_evidence(keeps_keyword: bool) -> None:
    # "works" matches the question only in the brother's clause: it says what Piotr does.
    brother = _scored("Tomasz's brother Piotr lives in Dublin and works in a bank.", 0.50)
    own = _scored("Tomasz drives a tram in Wroclaw.", 0.42)
    keyword = ArmResult("keyword", [ArmHit(brother.cand.unit_id, 1.0, {"coverage": 0.4})])
    cfg = RecallConfig(other_subject_keyword=keeps_keyword)
    await _rerank(None, "What does Tomasz do for work?", [brother, own], cfg, [keyword])
    assert own.rerank == pytest.approx(0.42)
    with_keyword = 0.50 + cfg.keyword_weight * 0.4
    assert brother.rerank == pytest.approx(
        cfg.other_subject_factor * (with_keyword if keeps_keyword else 0.50)
    )
    assert (brother.rerank < own.rerank) is not keeps_keyword
    # A fact about the person keeps its keyword evidence.
    mine = _scored("Tomasz works nights on the tram.", 0.50)
    keyword = ArmResult("keyword", [ArmHit(mine.cand.unit_id, 1.0, {"coverage": 0.4})])
    await _rerank(None, "What does Tomasz do for work?", [mine], cfg, [keyword])
    assert mine.rerank == pytest.approx(with_keyword)
