"""Deterministic fact extraction without an LLM: self-contained facts of sentences and exchanges.

A chat turn is cut into its sentences, each a fact of its own; a sentence with little to say
(a greeting, a question, "It was so much fun!") travels with its neighbour instead. Short facts
rank on what they say rather than on the small talk around it, and a token budget holds more
of them. Each reply also makes an exchange fact: how the reply opens, with how the turn it
answers closes (usually the question), which gives an answer like "Yes, last Friday!" the
context it lacks alone. A turn with little substance of its own (a reaction, a bare question)
is remembered only through its exchanges. A message without a speaker (a document) is kept
whole, or cut into groups of sentences when very long, since nothing else would give its
sentences their context.

What makes the text "self-contained" is resolving what a reader of the isolated fact could not:
first person becomes the speaker's name, second person the other participant of a two-person
chunk, and relative dates gain their absolute date in parentheses. Fact ids hash only the bank,
the message id and the position inside the message, so redelivering a message in a differently
cut chunk upserts the same facts instead of duplicating them.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any
from uuid import UUID

from tempr.agents.extraction.entities import (
    Token,
    entities_from_doc,
    find_entities,
    get_nlp,
    merge_mentions,
    model_can_parse,
    tokens_from_doc,
    tokens_from_text,
)
from tempr.agents.extraction.sentences import sentence_spans
from tempr.agents.extraction.substance import carries_substance, content_words
from tempr.dates import TimeRange, find_time_ranges, format_time_range
from tempr.schemas.events import ChunkEvent, EntityMention, ExtractedFact, MessageEvent
from tempr.schemas.ids import stable_id

__all__ = [
    "MAX_FACT_CHARS",
    "MIN_SENTENCE_CONTENT_WORDS",
    "SPEAKER_WINDOW",
    "ParseCache",
    "exchange_facts",
    "extract_local",
    "extract_local_many",
    "facts_for_message",
    "facts_per_message",
    "speakers_of",
]

MAX_FACT_CHARS = 600
# A sentence of a turn with fewer content words than this joins the sentence after it.
MIN_SENTENCE_CONTENT_WORDS = 3
# A message's speakers are those of its last this-many turns (itself included): enough to
# see both sides of a two-person exchange, and never a turn that came after it.
SPEAKER_WINDOW = 8

_FIRST_PERSON = {"i", "me", "my", "mine", "myself"}
_SECOND_PERSON = {"you", "your", "yours", "yourself"}
_PLURAL_YOU = {"guys", "all", "two", "both", "folks", "people", "everyone"}
_CONTRACTIONS = {"'m": "is", "'re": "is", "'ve": "has", "'d": "would", "'ll": "will", "'s": "is"}
_AUX_3RD = {"am": "is", "are": "is", "were": "was", "have": "has", "do": "does", "'m": "is"}
# Past and present look alike for these; conjugating would turn "I read it" into "reads".
_AMBIGUOUS_VERBS = {
    "read", "put", "set", "cut", "hit", "let", "quit", "hurt", "bet", "cast", "cost", "shut",
    "spread", "split", "upset", "broadcast", "thought", "felt", "had", "got", "made",
}  # fmt: skip
_ADVERB_TAGS = {"RB", "RBR", "RBS"}
_QUANTIFIERS = {"all", "both", "each", "some", "many", "most", "none", "any", "either"}
# Auxiliaries that keep the verb after their subject bare: "did you have" -> "did Melanie have".
_BARE_AFTER = {"did", "does", "can", "could", "will", "would", "should", "shall", "may", "might", "must"}


_LONGEST_EXPRESSION = 200  # characters; "between the 3rd of March and ..." is far shorter


@dataclass(frozen=True)
class _Turn:
    """What rewriting one message needs, bundled to keep signatures short."""

    text: str
    tokens: list[Token]
    speaker: str | None
    other: str | None
    ranges: list[TimeRange]
    # Sorted offsets, so each sentence finds its tokens and time expressions by bisection:
    # a scan of the whole turn per sentence is quadratic on a long turn.
    token_starts: list[int] = field(default_factory=list)
    range_starts: list[int] = field(default_factory=list)
    lowered: str = ""

    @classmethod
    def of(
        cls, text: str, tokens: list[Token], speaker: str | None, other: str | None, ranges: list[TimeRange]
    ) -> _Turn:
        ranges = sorted(ranges, key=lambda r: r.span[0])
        return cls(
            text,
            tokens,
            speaker,
            other,
            ranges,
            [t.idx for t in tokens],
            [r.span[0] for r in ranges],
            text.lower(),
        )

    def tokens_in(self, start: int, end: int) -> list[Token]:
        return self.tokens[bisect_left(self.token_starts, start) : bisect_left(self.token_starts, end)]

    def ranges_in(self, start: int, end: int) -> list[TimeRange]:
        return self.ranges[bisect_left(self.range_starts, start) : bisect_left(self.range_starts, end)]


def extract_local(chunk: ChunkEvent, history: Sequence[MessageEvent] | None = None) -> list[ExtractedFact]:
    """Facts of every message of ``chunk``, each message's own then the exchange it replies in.

    ``history`` is the conversation's journaled turns in order, from a few before the chunk to
    its last message (``store.messages.conversation_history``). What a message yields depends
    only on it and the turns before it, never on how the turns were cut into chunks: its
    speakers are those of its last ``SPEAKER_WINDOW`` turns, it replies to the turn before it
    wherever that turn arrived, and a turn without substance of its own is kept only inside
    the exchange it replies in (see substance). A live stream, one turn per chunk, therefore
    gives the same facts, with the same ids, as a batch.
    """
    return extract_local_many([(chunk, history)])[0]


def extract_local_many(
    jobs: Sequence[tuple[ChunkEvent, Sequence[MessageEvent] | None]],
    parses: ParseCache | None = None,
) -> list[list[ExtractedFact]]:
    """`extract_local` of each (chunk, history), with one spaCy pass over all their texts.

    spaCy costs less per text in larger batches, and a text shared by two chunks (the turn a
    chunk's first message replies to closes the chunk before) is parsed once. A doc does not
    depend on the texts batched with it (tags and entities compared on conv-26 at batch sizes
    8 to 1,000), so the facts are the same as chunk by chunk, and the same with `parses`.
    """
    plans = [_plan(chunk, history) for chunk, history in jobs]
    texts = [m.content for plan in plans for m, _ in plan.wanted.values()]
    parsed = parses.parse(texts) if parses is not None else _parse(texts)
    return [plan.facts(parsed) for plan in plans]


@dataclass
class _Plan:
    """One chunk's messages, each with the (message, speakers) extractions it is made of."""

    turns: list[MessageEvent]
    wanted: dict[tuple[UUID, str, tuple[str, ...]], tuple[MessageEvent, list[str]]]
    steps: list[tuple[MessageEvent, tuple, tuple | None]]

    def facts(self, parsed: dict[str, _Parsed]) -> list[ExtractedFact]:
        extracted = dict(
            zip(
                self.wanted,
                (_read(m, speakers, parsed) for m, speakers in self.wanted.values()),
                strict=True,
            )
        )
        facts: list[ExtractedFact] = []
        for message, mine, theirs in self.steps:
            prev = _previous(self.turns, message)
            exchange = None
            if prev is not None and theirs is not None:
                exchange = _exchange(prev, extracted[theirs], message, extracted[mine])
            # A reaction is remembered inside its exchange only (see substance).
            if exchange is None or carries_substance(message.content, mine[2]):
                facts.extend(extracted[mine])
            if exchange is not None:
                facts.append(exchange)
        return facts


def _plan(chunk: ChunkEvent, history: Sequence[MessageEvent] | None) -> _Plan:
    turns = _timeline(chunk.messages, history)
    # (message, speakers) pairs to extract: each message as itself, and the turn it replies to
    # as the reply sees it (the opening turn's "you" is known only once someone answers).
    wanted: dict[tuple[UUID, str, tuple[str, ...]], tuple[MessageEvent, list[str]]] = {}
    steps: list[tuple[MessageEvent, tuple, tuple | None]] = []
    for message in chunk.messages:
        speakers = _speakers_before(turns, message)
        mine = (*_key(message), tuple(speakers))
        wanted.setdefault(mine, (message, speakers))
        prev = _previous(turns, message)
        theirs = None if prev is None else (*_key(prev), tuple(speakers))
        if prev is not None and theirs is not None:
            wanted.setdefault(theirs, (prev, speakers))
        steps.append((message, mine, theirs))
    return _Plan(turns, wanted, steps)


def facts_per_message(chunk: ChunkEvent) -> list[list[ExtractedFact]]:
    """Each message's own facts (one per sentence of a turn), before selection."""
    return _own_facts(chunk.messages, _timeline(chunk.messages, None))


def _timeline(messages: Sequence[MessageEvent], history: Sequence[MessageEvent] | None) -> list[MessageEvent]:
    """The turns a chunk is read against: the journal's history when it holds every message of
    the chunk, else the chunk itself."""
    if history:
        known = {_key(m) for m in history}
        if all(_key(m) in known for m in messages):
            return list(history)
    return list(messages)


def _key(message: MessageEvent) -> tuple[UUID, str]:
    return message.event_id, message.message_id


def _conversation_turns(turns: Sequence[MessageEvent], message: MessageEvent) -> list[MessageEvent]:
    if not message.conversation_id:
        return [message]
    return [t for t in turns if t.conversation_id == message.conversation_id]


def _position(turns: Sequence[MessageEvent], message: MessageEvent) -> tuple[list[MessageEvent], int]:
    same = _conversation_turns(turns, message)
    keys = [_key(t) for t in same]
    return same, keys.index(_key(message)) if _key(message) in keys else len(same) - 1


def _previous(turns: Sequence[MessageEvent], message: MessageEvent) -> MessageEvent | None:
    same, i = _position(turns, message)
    return same[i - 1] if i > 0 else None


def _speakers_before(turns: Sequence[MessageEvent], message: MessageEvent) -> list[str]:
    """Speakers of the message's last ``SPEAKER_WINDOW`` turns, itself included."""
    same, i = _position(turns, message)
    return speakers_of([*same[max(0, i - SPEAKER_WINDOW + 1) : i], message])


def _own_facts(messages: Sequence[MessageEvent], turns: Sequence[MessageEvent]) -> list[list[ExtractedFact]]:
    return _facts_of([(m, _speakers_before(turns, m)) for m in messages])


def _facts_of(jobs: Sequence[tuple[MessageEvent, list[str]]]) -> list[list[ExtractedFact]]:
    """Each message's facts as read with its speakers; spaCy parses each text once."""
    parsed = _parse([m.content for m, _ in jobs])
    return [_read(m, speakers, parsed) for m, speakers in jobs]


@dataclass(frozen=True, slots=True)
class _Entity:
    """What the extractor reads of a spaCy entity span."""

    text: str
    label_: str
    start_char: int
    end_char: int


@dataclass(frozen=True, slots=True)
class _Doc:
    """What the extractor reads of a spaCy doc (`entities_from_doc`): ~1 KB, where the doc
    with its token structs and tensors holds ~50 KB, which matters to `ParseCache`."""

    text: str
    ents: tuple[_Entity, ...]

    @classmethod
    def of(cls, doc: Any) -> _Doc:
        return cls(doc.text, tuple(_Entity(e.text, e.label_, e.start_char, e.end_char) for e in doc.ents))


# A text's entities and tokens: read once per text, though a turn is read once as itself
# and again as the turn its reply answers (walking a doc's tokens costs as much as tagging it).
_Parsed = tuple[_Doc, list[Token]]


def _parse(texts: Sequence[str]) -> dict[str, _Parsed]:
    """Each distinct text's spaCy doc and tokens; a text spaCy cannot read in linear time is
    left out (it goes the regex way), and so is everything when spaCy is unavailable."""
    nlp = get_nlp()
    if nlp is None:
        return {}
    parseable = [t for t in dict.fromkeys(texts) if model_can_parse(t)]
    return {
        text: (_Doc.of(doc), tokens_from_doc(doc))
        for text, doc in zip(parseable, nlp.pipe(parseable), strict=True)
    }


class ParseCache:
    """The parses of the last `size` distinct texts, most recently used kept.

    In a live conversation every turn is its own chunk, and a turn is read twice: as itself,
    then as the turn the next reply answers, one chunk later. Without this each turn is
    parsed twice (spaCy was 29 % of the worker's CPU in a stream of single-turn chunks).
    Not thread-safe: the worker's extractor runs one batch at a time (`Coalescer`).
    """

    def __init__(self, size: int) -> None:
        self.size = size
        self.parsed = 0  # texts spaCy was given through this cache
        self._parsed: OrderedDict[str, _Parsed] = OrderedDict()

    def parse(self, texts: Sequence[str]) -> dict[str, _Parsed]:
        found: dict[str, _Parsed] = {}
        missing: list[str] = []
        for text in dict.fromkeys(texts):
            hit = self._parsed.get(text)
            if hit is None:
                missing.append(text)
            else:
                self._parsed.move_to_end(text)
                found[text] = hit
        fresh = _parse(missing)
        self.parsed += len(missing)
        self._parsed.update(fresh)
        while len(self._parsed) > self.size:
            self._parsed.popitem(last=False)
        return found | fresh

    def __len__(self) -> int:
        return len(self._parsed)


def _read(message: MessageEvent, speakers: list[str], parsed: dict[str, _Parsed]) -> list[ExtractedFact]:
    doc, tokens = parsed.get(message.content, (None, None))
    return facts_for_message(message, speakers, doc=doc, tokens=tokens)


def _exchange(
    prev: MessageEvent,
    prev_facts: Sequence[ExtractedFact],
    cur: MessageEvent,
    cur_facts: Sequence[ExtractedFact],
) -> ExtractedFact | None:
    """The fact where a reply meets the turn it answers: the last fact of the turn asked, then
    the first of the reply, citing both turns.

    A turn alone often misses what it is about ("Yes, last Friday!"); the exchange keeps
    the question and the answer together, as the extraction principles ask of narrative
    facts. Only the meeting point of the two turns is repeated: the rest of each turn is in
    its own sentence facts, and whole turns twice over would fill a token budget with text
    already shown. Only consecutive turns of one conversation by two speakers are paired.
    """
    if not prev.conversation_id or prev.conversation_id != cur.conversation_id:
        return None
    if not prev_facts or not cur_facts or prev.speaker == cur.speaker:
        return None
    parts = (prev_facts[-1], cur_facts[0])
    text = " ".join(f.text for f in parts)
    if len(text) > 2 * MAX_FACT_CHARS:
        return None
    dated = next((f for f in reversed(parts) if f.occurred_start), None)
    return ExtractedFact(
        fact_id=stable_id(cur.bank_id, "exchange", prev.message_id, cur.message_id),
        text=text,
        fact_type="world",
        occurred_start=dated.occurred_start if dated else None,
        occurred_end=dated.occurred_end if dated else None,
        mentioned_at=cur.timestamp,
        entities=merge_mentions([e for f in parts for e in f.entities]),
        source_message_ids=[prev.message_id, cur.message_id],
        context=cur.context,
        document_id=cur.document_id,
        conversation_id=cur.conversation_id,
        tags=sorted(set(prev.tags) | set(cur.tags)),
        metadata={"extractor": "local", "unit": "exchange"},
    )


def exchange_facts(
    messages: Sequence[MessageEvent], per_message: Sequence[Sequence[ExtractedFact]]
) -> list[ExtractedFact]:
    """The exchange facts of consecutive messages (see ``_exchange``)."""
    pairs = pairwise(zip(messages, per_message, strict=True))
    found = (_exchange(prev, prev_facts, cur, cur_facts) for (prev, prev_facts), (cur, cur_facts) in pairs)
    return [f for f in found if f is not None]


def speakers_of(messages: Sequence[MessageEvent]) -> list[str]:
    """Distinct speakers in order of first appearance."""
    seen: dict[str, None] = {}
    for message in messages:
        if message.speaker:
            seen.setdefault(message.speaker, None)
    return list(seen)


def facts_for_message(
    message: MessageEvent,
    speakers: Sequence[str],
    *,
    doc: Any | None = None,
    tokens: list[Token] | None = None,
) -> list[ExtractedFact]:
    """Facts of one message; ``doc`` is its spaCy doc when the caller batched the pipeline,
    ``tokens`` the doc's tokens when the caller has them already."""
    text = message.content
    reference = message.timestamp or message.received_at
    speaker = message.speaker or None
    others = [s for s in speakers if s != speaker]
    other = others[0] if speaker and len(speakers) == 2 and len(others) == 1 else None
    if tokens is None:
        tokens = tokens_from_doc(doc) if doc is not None else tokens_from_text(text)
    turn = _Turn.of(text, tokens, speaker, other, find_time_ranges(text, reference, tense=True))
    known = list(dict.fromkeys([*speakers, *([speaker] if speaker else [])]))
    if doc is not None:
        mentions = entities_from_doc(doc, known_speakers=known, tokens=tokens)
    else:
        mentions = find_entities(text, known_speakers=known)
    segments = _sentence_groups(text, speakers) if speaker else _segments(text)
    return [_fact(message, turn, start, end, index, mentions) for index, (start, end) in enumerate(segments)]


# --------------------------------------------------------------------------- one fact


def _fact(
    message: MessageEvent,
    turn: _Turn,
    start: int,
    end: int,
    index: int,
    mentions: list[EntityMention],
) -> ExtractedFact:
    body, first_person = _rewrite(turn, start, end)
    text = _attribute(body, turn) if turn.speaker else body
    ranges = turn.ranges_in(start, end)
    when = ranges[0] if ranges else None
    return ExtractedFact(
        fact_id=stable_id(message.bank_id, "fact", *_part_key(message), index),
        text=text,
        fact_type="experience" if first_person else "world",
        occurred_start=when.start if when else None,
        occurred_end=when.end if when else None,
        mentioned_at=message.timestamp,
        entities=_entities_for(text, turn, mentions, whole=(start, end) == (0, len(turn.text))),
        source_message_ids=[message.message_id],
        context=message.context,
        document_id=message.document_id,
        conversation_id=message.conversation_id,
        tags=list(message.tags),
        metadata=_metadata(message),
        embedding=None,
    )


def _part_key(message: MessageEvent) -> tuple[str, ...]:
    # A long document arrives in parts (see the segmenter); each part's facts need their own ids.
    part = message.metadata.get("part")
    return (message.message_id,) if part is None else (message.message_id, f"part-{part}")


def _sentence_groups(text: str, names: Sequence[str]) -> list[tuple[int, int]]:
    """Spans of a turn's sentences that have something to say, each with the sentences
    before it that have not (a greeting, a question); trailing ones join the last."""
    groups: list[tuple[int, int]] = []
    lead: int | None = None  # start of the sentences waiting for one with substance
    spans = sentence_spans(text) or [(0, len(text))]
    for start, end in spans:
        lead = start if lead is None else lead
        if len(content_words(text[start:end], names)) >= MIN_SENTENCE_CONTENT_WORDS:
            groups.append((lead, end))
            lead = None
    if lead is not None:
        groups[-1:] = [(groups[-1][0] if groups else lead, spans[-1][1])]
    return groups


def _segments(text: str) -> list[tuple[int, int]]:
    """The whole text, or groups of whole sentences of at most ~MAX_FACT_CHARS each."""
    if len(text) <= MAX_FACT_CHARS:
        return [(0, len(text))]
    groups: list[tuple[int, int]] = []
    for s, e in sentence_spans(text) or [(0, len(text))]:
        if groups and e - groups[-1][0] <= MAX_FACT_CHARS:
            groups[-1] = (groups[-1][0], e)
        else:
            groups.append((s, e))
    return groups


def _attribute(body: str, turn: _Turn) -> str:
    """Name the speaker when resolving pronouns did not already put them in the text."""
    speaker = turn.speaker or ""
    if speaker.lower() in body.lower():
        return body
    questions = [s for s in _sentences(body) if s.rstrip().endswith("?")]
    asked = bool(questions) and len(questions) == len(_sentences(body))
    if turn.other:
        lead = f"{speaker} asked {turn.other}" if asked else f"{speaker} said to {turn.other}"
    else:
        lead = f"{speaker} asked" if asked else f"{speaker} said"
    return f"{lead}: {body}"


def _sentences(text: str) -> list[str]:
    return [text[s:e] for s, e in sentence_spans(text)]


def _entities_for(
    text: str, turn: _Turn, mentions: list[EntityMention], *, whole: bool
) -> list[EntityMention]:
    """Speaker first, then mentions of this part of the turn, then participants resolved in.

    Mentions are filtered by name only for a part of a split turn: for a whole turn the name
    may legitimately be absent from the text (a nickname canonicalized to its speaker).
    """
    lowered = text.lower()
    own = [EntityMention(name=turn.speaker, kind="person")] if turn.speaker else []
    present = [m for m in mentions if whole or m.name.lower() in lowered]
    resolved = [
        EntityMention(name=name, kind="person") for name in (turn.other,) if name and name.lower() in lowered
    ]
    return merge_mentions([*own, *present, *resolved])


def _metadata(message: MessageEvent) -> dict[str, Any]:
    """The fact's own bookkeeping. The message's metadata stays with the message (journal,
    `message_event_id`): copied into each of its facts it would multiply a large metadata by
    the number of facts and overflow the facts event."""
    meta: dict[str, Any] = {"message_event_id": str(message.event_id), "extractor": "local", "unit": "turn"}
    meta.update({k: message.metadata[k] for k in ("part", "parts") if k in message.metadata})
    if message.speaker:
        meta["speaker"] = message.speaker
    return meta


# --------------------------------------------------------------------------- rewriting


def _rewrite(turn: _Turn, start: int, end: int) -> tuple[str, bool]:
    """Text of [start, end) with persons resolved and relative dates annotated.

    Returns the text and whether the speaker spoke about themselves in first person.
    """
    tokens = turn.tokens_in(start, end)
    notes = _date_notes(turn, tokens)
    words = [t.text for t in tokens]
    first_person = False
    for i, tok in enumerate(tokens):
        low = _norm(tok.text)
        if turn.speaker and low in _FIRST_PERSON and _is_pronoun(tok):
            words[i] = _person_form(low, turn.speaker, tok)
            first_person = True
            if low == "i":
                _agree(tokens, words, i)
        elif turn.other and low in _SECOND_PERSON and _resolvable_you(tokens, i):
            words[i] = _person_form(low, turn.other, tok)
            if low == "you":
                _agree(tokens, words, i)
    parts = [w + notes.get(i, "") + tokens[i].whitespace for i, w in enumerate(words)]
    return "".join(parts).strip() or turn.text[start:end].strip(), first_person


def _date_notes(turn: _Turn, tokens: list[Token]) -> dict[int, str]:
    """Token index -> " (7 May 2023)" to insert after the last token of a relative phrase."""
    notes: dict[int, str] = {}
    if not tokens:
        return notes
    starts = [t.idx for t in tokens]
    # Only expressions that can end within these tokens: starting before their end, and not
    # long before their start (an expression spans a few words).
    first = bisect_left(turn.range_starts, starts[0] - _LONGEST_EXPRESSION)
    for tr in turn.ranges[first : bisect_left(turn.range_starts, tokens[-1].idx + 1)]:
        if not tr.relative or tr.span[1] <= starts[0]:
            continue
        last = bisect_left(starts, tr.span[1]) - 1
        if last < 0 or tokens[last].idx < tr.span[0]:
            continue
        label = format_time_range(tr)
        if label.lower() not in turn.lowered:
            notes[last] = f" ({label})"
    return notes


def _norm(word: str) -> str:
    return word.lower().replace("\u2019", "'")


def _is_pronoun(tok: Token) -> bool:
    return tok.tag is None or tok.tag in ("PRP", "PRP$", "NN", "NNP")


def _resolvable_you(tokens: list[Token], i: int) -> bool:
    """Skip plural and formulaic second person, which does not point at one participant."""
    nxt = _norm(tokens[i + 1].text) if i + 1 < len(tokens) else ""
    prev = _norm(tokens[i - 1].text) if i > 0 else ""
    before_prev = _norm(tokens[i - 2].text) if i > 1 else ""
    if nxt in _PLURAL_YOU or (prev == "thank" and _norm(tokens[i].text) == "you"):
        return False
    return not (prev == "of" and before_prev in _QUANTIFIERS)


def _person_form(low: str, name: str, tok: Token) -> str:
    if low in ("my", "mine", "your", "yours"):
        return f"{name}'s"
    return name


def _agree(tokens: list[Token], words: list[str], subject: int) -> None:
    """Make the verb next to a resolved I/you agree with a third-person singular name."""
    prev = subject - 1
    if prev >= 0 and _norm(tokens[prev].text) == "n't":
        prev -= 1
    inverted = prev >= 0 and _norm(tokens[prev].text) in ("am", "are", "were", "have", "do")
    if inverted:  # "are you ok?", "what kind of jobs are you thinking of?"
        words[prev] = _match_case(_AUX_3RD[_norm(tokens[prev].text)], tokens[prev].text)
        return
    if prev >= 0 and _norm(tokens[prev].text) in _BARE_AFTER:
        return
    j = subject + 1
    while j < len(tokens) and tokens[j].tag in _ADVERB_TAGS and j - subject <= 2:
        j += 1
    if j >= len(tokens):
        return
    word = _norm(tokens[j].text)
    if word in _CONTRACTIONS and j == subject + 1 and tokens[subject].whitespace == "":
        words[j] = " " + _CONTRACTIONS[word]
    elif word in _AUX_3RD:
        words[j] = _AUX_3RD[word]
    elif tokens[j].tag == "VBP" and word.isalpha() and word not in _AMBIGUOUS_VERBS:
        words[j] = _third_person(word)


def _third_person(verb: str) -> str:
    if verb in ("be", "am"):
        return "is"
    if verb == "have":
        return "has"
    if verb.endswith(("s", "sh", "ch", "x", "z", "o")):
        return verb + "es"
    if len(verb) > 1 and verb.endswith("y") and verb[-2] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"


def _match_case(word: str, original: str) -> str:
    return word.capitalize() if original[:1].isupper() else word
