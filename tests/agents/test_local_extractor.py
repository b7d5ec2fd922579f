"""The local extractor on real LoCoMo turns (conv-26: Caroline and Melanie)."""

from __future__ import annotations

import itertools
import json
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tempr.agents.extraction.entities import get_nlp
from tempr.agents.extraction.local import (
    MAX_FACT_CHARS,
    MIN_SENTENCE_CONTENT_WORDS,
    SPEAKER_WINDOW,
    extract_local,
    facts_for_message,
    facts_per_message,
)
from tempr.agents.extraction.sentences import split_sentences
from tempr.agents.extraction.substance import carries_substance, content_words
from tempr.schemas.events import ChunkEvent, ExtractedFact, MessageEvent
from tempr.schemas.ids import stable_id

LOCOMO = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "locomo"
BANK = "test-bank"


def turn_facts(chunk: ChunkEvent) -> list[ExtractedFact]:
    """Every turn's own facts, before `extract_local` keeps only the turns with substance."""
    return [f for own in facts_per_message(chunk) for f in own]


def _conversation() -> dict[str, Any]:
    path = LOCOMO / "conv-26.json"
    if not path.exists():
        pytest.skip(f"LoCoMo data not found at {path}")
    return json.loads(path.read_text())


def _session_time(raw: str) -> datetime:
    return datetime.strptime(raw, "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def _messages(conv: dict[str, Any], session: int) -> list[MessageEvent]:
    when = _session_time(conv[f"session_{session}_date_time"])
    return [
        MessageEvent(
            event_id=uuid.uuid5(uuid.NAMESPACE_URL, turn["dia_id"]),
            bank_id=BANK,
            message_id=turn["dia_id"],
            content=turn["text"],
            speaker=turn["speaker"],
            timestamp=when,
            conversation_id="conv-26",
            tags=["locomo"],
            metadata={"session": session},
            received_at=when,
        )
        for turn in conv[f"session_{session}"]
    ]


def _chunk(messages: list[MessageEvent]) -> ChunkEvent:
    return ChunkEvent(chunk_id=uuid.uuid4(), bank_id=BANK, conversation_id="conv-26", messages=messages)


def _sessions(conv: dict[str, Any]) -> list[int]:
    n = 1
    while f"session_{n}" in conv:
        n += 1
    return list(range(1, n))


def _by_message(facts: list[ExtractedFact]) -> dict[str, list[ExtractedFact]]:
    out: dict[str, list[ExtractedFact]] = {}
    for fact in facts:
        out.setdefault(fact.source_message_ids[0], []).append(fact)
    return out


def test_a_yearless_date_in_a_plan_is_its_next_occurrence() -> None:
    when = datetime(2023, 5, 8, tzinfo=UTC)
    said = [
        ("m1", "I plan to return to Kiel on July 20."),
        ("m2", "I returned from Kiel on April 20."),
    ]
    messages = [
        MessageEvent(
            event_id=uuid.uuid4(),
            bank_id=BANK,
            message_id=mid,
            content=text,
            speaker="Ines",
            conversation_id="trip",
            timestamp=when,
            received_at=when,
        )
        for mid, text in said
    ]
    facts = _by_message(turn_facts(_chunk(messages)))
    assert facts["m1"][0].occurred_start == datetime(2023, 7, 20, tzinfo=UTC)  # not July 2022
    assert facts["m2"][0].occurred_start == datetime(2023, 4, 20, tzinfo=UTC)


def test_first_person_and_relative_date_resolved() -> None:
    facts = _by_message(turn_facts(_chunk(_messages(_conversation(), 1))))
    (fact,) = facts["D1:3"]
    assert fact.text.startswith("Caroline went to a LGBTQ support group yesterday")
    assert "7 May 2023" in fact.text
    assert "I " not in fact.text
    assert fact.fact_type == "experience"
    assert fact.occurred_start == datetime(2023, 5, 7, tzinfo=UTC)
    assert fact.occurred_end == datetime(2023, 5, 7, 23, 59, 59, tzinfo=UTC)
    assert fact.mentioned_at == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert fact.source_message_ids == ["D1:3"]
    names = {e.name: e.kind for e in fact.entities}
    assert names["Caroline"] == "person"
    assert "LGBTQ" in names


def test_second_person_resolved_and_speaker_named() -> None:
    facts = _by_message(turn_facts(_chunk(_messages(_conversation(), 1))))
    (fact,) = facts["D1:4"]  # Melanie: "... Did you hear any inspiring stories?"
    assert "Melanie" in fact.text
    assert "Did Caroline hear" in fact.text
    assert fact.fact_type == "world"
    assert {"Melanie", "Caroline"} <= {e.name for e in fact.entities}
    assert fact.occurred_start is None and fact.occurred_end is None


def test_every_turn_yields_a_fact_with_provenance_and_speaker() -> None:
    conv = _conversation()
    messages = _messages(conv, 1)
    facts = turn_facts(_chunk(messages))
    by_message = _by_message(facts)
    assert list(by_message) == [m.message_id for m in messages]
    for message in messages:
        for fact in by_message[message.message_id]:
            assert message.speaker is not None and message.speaker in fact.text
            assert fact.source_message_ids == [message.message_id]
            assert fact.entities[0].name == message.speaker
            assert fact.entities[0].kind == "person"
            assert fact.conversation_id == "conv-26"
            assert fact.tags == ["locomo"]
            assert "session" not in fact.metadata  # the message's metadata stays with the message
            assert fact.metadata["message_event_id"] == str(message.event_id)
            assert fact.embedding is None


def test_filler_turn_outside_an_exchange_keeps_its_own_fact() -> None:
    conv = _conversation()
    message = _messages(conv, 1)[0].model_copy(update={"content": "lol", "message_id": "X:1"})
    (fact,) = extract_local(_chunk([message]))
    assert fact.source_message_ids == ["X:1"]
    assert "Caroline" in fact.text and "lol" in fact.text


def test_turns_without_substance_live_only_in_their_exchanges() -> None:
    conv = _conversation()
    speakers = [conv["speaker_a"], conv["speaker_b"]]
    for session in _sessions(conv)[:5]:
        messages = _messages(conv, session)
        facts = extract_local(_chunk(messages))
        own = {f.source_message_ids[0] for f in facts if f.metadata.get("unit") == "turn"}
        cited = {m for f in facts for m in f.source_message_ids}
        assert cited == {m.message_id for m in messages}  # nothing is forgotten
        for i, m in enumerate(messages):
            # The turn that opens a conversation answers nothing: it keeps its own fact, so
            # that it is never left without one while its reply has not come (a live stream).
            assert (m.message_id in own) == (i == 0 or carries_substance(m.content, speakers)), m.content
    # D1:4 "Wow, Caroline! ... Did you hear any inspiring stories?" is a reaction and a question.
    assert not carries_substance(_messages(conv, 1)[3].content, speakers)
    assert carries_substance("I went to a LGBTQ support group yesterday and it was so powerful.", speakers)


def test_fact_ids_are_stable_across_chunk_boundaries() -> None:
    messages = _messages(_conversation(), 1)
    whole = turn_facts(_chunk(messages))
    halves = turn_facts(_chunk(messages[:5])) + turn_facts(_chunk(messages[5:]))
    again = turn_facts(_chunk(messages))
    assert [f.fact_id for f in whole] == [f.fact_id for f in halves]
    assert [f.model_dump() for f in whole] == [f.model_dump() for f in again]
    first = whole[0]
    assert first.fact_id == stable_id(BANK, "fact", first.source_message_ids[0], 0)


def test_long_turn_is_split_on_sentences_with_same_provenance() -> None:
    conv = _conversation()
    base = _messages(conv, 1)[2]  # Caroline, D1:3
    sentence = "I painted a big mural with my friends at the community center yesterday. "
    long_text = sentence * (MAX_FACT_CHARS // len(sentence) + 3)
    (message,) = [base.model_copy(update={"content": long_text.strip()})]
    facts = turn_facts(_chunk([message]))
    assert len(facts) >= 2
    assert all(f.source_message_ids == ["D1:3"] for f in facts)
    assert all(len(f.text) <= MAX_FACT_CHARS * 1.5 for f in facts)
    assert len({f.fact_id for f in facts}) == len(facts)
    assert all("Caroline" in f.text for f in facts)
    assert sum(f.text.count("mural") for f in facts) == long_text.count("mural")


def test_message_without_speaker_is_kept_verbatim() -> None:
    when = datetime(2023, 5, 8, tzinfo=UTC)
    message = MessageEvent(
        event_id=uuid.uuid4(),
        bank_id=BANK,
        message_id="doc-1",
        content="The plant opened in 2019 in Berlin.",
        timestamp=when,
        document_id="d1",
        received_at=when,
    )
    (fact,) = turn_facts(_chunk([message]))
    assert fact.text == "The plant opened in 2019 in Berlin."
    assert fact.fact_type == "world"
    assert fact.document_id == "d1"
    assert fact.occurred_start == datetime(2019, 1, 1, tzinfo=UTC)


def test_all_of_conv_26_is_fast_and_complete() -> None:
    conv = _conversation()
    chunks = [_chunk(_messages(conv, s)) for s in _sessions(conv)]
    turn_facts(chunks[0])  # warm the spaCy model outside the timing
    started = time.perf_counter()
    facts = [f for chunk in chunks for f in turn_facts(chunk)]
    elapsed = time.perf_counter() - started
    turns = sum(len(c.messages) for c in chunks)
    assert len({f.source_message_ids[0] for f in facts}) == turns
    assert len({f.fact_id for f in facts}) == len(facts)
    assert elapsed < 30, f"{turns} turns took {elapsed:.1f}s"


def test_works_without_spacy(monkeypatch: pytest.MonkeyPatch) -> None:
    from tempr.agents.extraction import local

    monkeypatch.setattr(local, "get_nlp", lambda: None)
    facts = _by_message(turn_facts(_chunk(_messages(_conversation(), 1))))
    (fact,) = facts["D1:3"]
    assert fact.text.startswith("Caroline went to a LGBTQ support group yesterday (7 May 2023)")
    assert fact.entities[0].name == "Caroline"


def test_each_reply_also_yields_an_exchange_fact_citing_both_turns() -> None:
    messages = _messages(_conversation(), 1)
    facts = extract_local(_chunk(messages))
    exchanges = [f for f in facts if f.metadata.get("unit") == "exchange"]
    turns = [f for f in facts if f.metadata.get("unit") == "turn"]
    assert len(turns) + len(exchanges) == len(facts)
    pairs = [(a.message_id, b.message_id) for a, b in itertools.pairwise(messages) if a.speaker != b.speaker]
    assert [tuple(f.source_message_ids) for f in exchanges] == pairs
    assert {f.source_message_ids[0] for f in turns} < {m.message_id for m in messages}
    # Each turn as its reply reads it: with both speakers known, even for the opening turn.
    speakers = ["Caroline", "Melanie"]
    nlp = get_nlp()
    by_message = {m.message_id: facts_for_message(m, speakers, doc=nlp(m.content)) for m in messages}
    for exchange in exchanges:
        a, b = exchange.source_message_ids
        assert exchange.text == f"{by_message[a][-1].text} {by_message[b][0].text}"  # where they meet
        assert exchange.fact_id == stable_id(BANK, "exchange", a, b)
    # Never across conversations.
    other = messages[1].model_copy(update={"conversation_id": "elsewhere"})
    mixed = extract_local(_chunk([messages[0], other]))
    assert not [f for f in mixed if f.metadata.get("unit") == "exchange"]


def _turn(content: str, message_id: str = "X:2") -> MessageEvent:
    base = _messages(_conversation(), 1)[2]  # Caroline, 8 May 2023
    return base.model_copy(update={"content": content, "message_id": message_id})


def test_a_turn_is_cut_into_its_sentences_with_small_talk_joining_a_neighbour() -> None:
    content = (
        "Hey Mel! Guess what? I adopted a puppy named Toby last week. "
        "My sister lives in Boston with two cats. I got promoted at work today! So happy!"
    )
    (own,) = facts_per_message(_chunk([_turn(content)]))
    texts = [f.text for f in own]
    assert texts == [
        "Hey Mel! Guess what? Caroline adopted a puppy named Toby last week (1-7 May 2023).",
        "Caroline's sister lives in Boston with two cats.",
        "Caroline got promoted at work today (8 May 2023)! So happy!",
    ]
    assert [f.fact_id for f in own] == [stable_id(BANK, "fact", "X:2", i) for i in range(3)]
    assert all(f.source_message_ids == ["X:2"] for f in own)
    assert own[0].occurred_start == datetime(2023, 5, 1, tzinfo=UTC)
    assert own[2].occurred_start == datetime(2023, 5, 8, tzinfo=UTC)
    assert "Boston" in {e.name for e in own[1].entities}
    assert "Toby" not in {e.name for e in own[1].entities}  # each sentence its own names


def test_a_turn_without_a_sentence_of_substance_stays_whole() -> None:
    (own,) = facts_per_message(_chunk([_turn("Wow, thanks! Really? That is so cool!")]))
    (fact,) = own
    assert fact.text == "Caroline said: Wow, thanks! Really? That is so cool!"


def test_every_sentence_of_conv_26_lands_in_exactly_one_fact_of_its_turn() -> None:
    conv = _conversation()
    speakers = [conv["speaker_a"], conv["speaker_b"]]
    for session in _sessions(conv)[:4]:
        messages = _messages(conv, session)
        for message, own in zip(messages, facts_per_message(_chunk(messages)), strict=True):
            pieces = [len(split_sentences(f.text)) for f in own]
            assert sum(pieces) == len(split_sentences(message.content)), message.content
            if len(own) > 1:  # a fact of its own says something
                assert all(len(content_words(f.text, speakers)) >= MIN_SENTENCE_CONTENT_WORDS for f in own)


def test_a_verb_after_did_or_a_modal_stays_bare() -> None:
    conv = _messages(_conversation(), 1)
    melanie = conv[3].model_copy(update={"content": "Did you have fun? Can you send it? Do you paint?"})
    (fact,) = facts_per_message(_chunk([conv[2], melanie]))[1]
    assert "Did Caroline have fun? Can Caroline send it? Does Caroline paint?" in fact.text


def test_an_exchange_is_where_two_turns_meet() -> None:
    asked = _turn(
        "I painted a sunset over the lake yesterday. I adopted a puppy named Toby last week. "
        "Did you ever have a dog?",
        "X:1",
    )
    answer = _turn(
        "Yes, a beagle called Max when I was a kid. I paint landscapes every weekend now.", "X:2"
    ).model_copy(update={"speaker": "Melanie"})
    facts = extract_local(_chunk([asked, answer]))
    (exchange,) = [f for f in facts if f.metadata["unit"] == "exchange"]
    assert exchange.text == (
        "Caroline adopted a puppy named Toby last week (1-7 May 2023). Did Melanie ever have a dog? "
        "Yes, a beagle called Max when Melanie was a kid."
    )
    assert exchange.source_message_ids == ["X:1", "X:2"]
    assert exchange.occurred_start == datetime(2023, 5, 1, tzinfo=UTC)  # from the part it quotes
    # The rest of each turn is in its own facts only.
    assert [f.text for f in facts if "sunset" in f.text or "landscapes" in f.text] == [
        "Caroline painted a sunset over the lake yesterday (7 May 2023).",
        "Melanie paints landscapes every weekend now.",
    ]


def _history(session: list[MessageEvent], chunk: list[MessageEvent]) -> list[MessageEvent]:
    """What the journal gives the extractor: the turns from SPEAKER_WINDOW - 1 before the
    chunk up to its last turn."""
    first, last = session.index(chunk[0]), session.index(chunk[-1])
    return session[max(0, first - SPEAKER_WINDOW + 1) : last + 1]


def _cut(session: list[MessageEvent], size: int) -> list[list[MessageEvent]]:
    return [session[i : i + size] for i in range(0, len(session), size)]


@pytest.mark.parametrize("size", [1, 3, 8])
def test_facts_do_not_depend_on_how_turns_were_chunked(size: int) -> None:
    conv = _conversation()
    for session in _sessions(conv)[:3]:
        turns = _messages(conv, session)
        batch = extract_local(_chunk(turns), turns)
        cut = [f for part in _cut(turns, size) for f in extract_local(_chunk(part), _history(turns, part))]
        assert [(f.fact_id, f.text) for f in cut] == [(f.fact_id, f.text) for f in batch]
        assert [f.model_dump() for f in cut] == [f.model_dump() for f in batch]
    # An exchange forms across every chunk boundary: one per reply, chunks of one turn too.
    exchanges = [f for f in batch if f.metadata["unit"] == "exchange"]
    assert len(exchanges) == sum(a.speaker != b.speaker for a, b in itertools.pairwise(turns))


def test_without_the_journal_a_chunk_of_one_turn_has_no_exchange() -> None:
    turns = _messages(_conversation(), 1)
    alone = extract_local(_chunk(turns[1:2]))
    assert [f.metadata["unit"] for f in alone] == ["turn"]
    exchange = extract_local(_chunk(turns[1:2]), turns[:2])[-1]
    assert exchange.metadata["unit"] == "exchange"
    assert exchange.source_message_ids == ["D1:1", "D1:2"]
