"""Whose fact it is: a question about a person is not answered by a fact about their relative.

A personal bank holds facts about its owner and about the people around them, written the
same way: "Kwame teaches chemistry", "Kwame's brother Kojo lives in Accra". Asked "Where does
Kwame live?", the query-fact cosine and the keyword evidence see "Kwame" and "live" in the
brother's fact and rank it first: neither knows that its subject is Kojo. Here the subject of
both sides is read from the surface, without a parser:

- the question's subject is a name right after an auxiliary ("does Kwame", "is Amara") or
  the possessor of something that is not a person ("Fatima's occupation");
- a fact is about someone else when it opens with that name's relative ("Kwame's brother
  Kojo ...", "Melanie's kids are ...", after an optional "X said:" attribution).

A question that itself speaks of relatives ("Is Kwame married?", "Does Dana have a sister?",
"What does Mei Lin's husband do?") or asks who did something to the person ("Who calls
Kwame?") has no subject here, and nothing is demoted.
"""

from __future__ import annotations

import re
from functools import lru_cache

__all__ = ["RELATIONS", "asked_about", "relative_of"]

# People named by their tie to someone. A closed class of English, not a list of the
# questions' words: it decides only whose fact it is.
RELATIONS = frozenset(
    [
        "sister",
        "brother",
        "sibling",
        "twin",
        "mother",
        "mom",
        "mum",
        "mama",
        "mommy",
        "father",
        "dad",
        "papa",
        "daddy",
        "parent",
        "husband",
        "wife",
        "spouse",
        "partner",
        "fiance",
        "fiancee",
        "boyfriend",
        "girlfriend",
        "ex",
        "son",
        "daughter",
        "child",
        "kid",
        "baby",
        "cousin",
        "aunt",
        "auntie",
        "uncle",
        "niece",
        "nephew",
        "grandmother",
        "grandma",
        "granny",
        "nan",
        "grandfather",
        "grandpa",
        "grandparent",
        "grandson",
        "granddaughter",
        "grandchild",
        "stepmother",
        "stepfather",
        "stepson",
        "stepdaughter",
        "stepbrother",
        "stepsister",
        "friend",
        "bestie",
        "boss",
        "manager",
        "colleague",
        "coworker",
        "co-worker",
        "neighbour",
        "neighbor",
        "roommate",
        "flatmate",
        "housemate",
        "classmate",
        "teammate",
        "mentor",
    ]
)
# Words by which a question speaks of relatives without naming one of RELATIONS.
_TIES = frozenset({"married", "marry", "marriage", "family", "relative", "relatives", "in-law", "in-laws"})

_NAME = r"[A-Z][\w\-]*(?:\s+[A-Z][\w\-]*){0,2}"
_POSSESSIVE = r"['\u2019]s"
# A name ends where no further capitalized word follows ("Mei Lin", not "Mei").
_WHOLE = r"(?![\w\-'\u2019]|\s+[A-Z])"
_AUX = r"(?i:does|did|do|is|was|are|were|has|had|have|will|would|can|could|should)"
_AFTER_AUX = re.compile(rf"\b{_AUX}\s+(?P<name>{_NAME}){_WHOLE}")
_POSSESSOR = re.compile(rf"(?<![\w\-])(?P<name>{_NAME}){_POSSESSIVE}\s+(?P<next>[\w\- ]{{1,60}})")
_FACT_OPENING = re.compile(
    rf"^(?:{_NAME}\s+said(?:\s+to\s+{_NAME})?:\s+)?(?P<owner>{_NAME}){_POSSESSIVE}\s+(?P<next>[\w\- ]{{1,60}})"
)
_WORD = re.compile(r"[a-z][a-z\-]*")
_NEAR = 3  # "Kwame's older twin brother": the tie comes within a few words


def _relation(word: str) -> bool:
    if word in RELATIONS:
        return True
    if word == "children" or word == "grandchildren":
        return True
    return word.endswith("s") and word[:-1] in RELATIONS


def _names_a_relative(after: str) -> bool:
    return any(_relation(w) for w in _WORD.findall(after.lower())[:_NEAR])


@lru_cache(maxsize=1024)
def asked_about(query: str) -> frozenset[str]:
    """The names the question asks about as its subject; empty when it speaks of relatives."""
    words = set(_WORD.findall(query.lower()))
    if words & _TIES or any(_relation(w) for w in words):
        return frozenset()
    names = {m.group("name") for m in _AFTER_AUX.finditer(query)}
    names |= {m.group("name") for m in _POSSESSOR.finditer(query) if not _names_a_relative(m.group("next"))}
    return frozenset(names)


def relative_of(fact_text: str) -> str | None:
    """The person whose relative the fact opens with ("Kwame's brother Kojo ..." → Kwame)."""
    m = _FACT_OPENING.match(fact_text)
    if m is None or not _names_a_relative(m.group("next")):
        return None
    return m.group("owner")
