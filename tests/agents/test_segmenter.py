"""Segmenter buffering rules, without a broker."""

from __future__ import annotations

from datetime import UTC, datetime

from tempr.agents.extract_facts import facts_event
from tempr.agents.extraction.local import extract_local
from tempr.agents.segment_messages import Segmenter, chunk_fact_budget, split_long_item
from tempr.schemas.events import GraphEvent, MessageEvent, encode_event
from tempr.schemas.ids import stable_id
from tempr.settings import Settings

NOW = datetime(2024, 1, 1, tzinfo=UTC)
EMBEDDING_DIM = 384  # all-MiniLM-L6-v2, the packaged default


def msg(
    i: int, *, conversation: str | None = "c1", content: str | None = None, bank: str = "b"
) -> MessageEvent:
    return MessageEvent(
        event_id=stable_id(bank, "message", i),
        bank_id=bank,
        message_id=f"m{i}",
        content=content or f"Turn number {i}.",
        speaker="Ann" if i % 2 else "Bo",
        conversation_id=conversation,
        received_at=NOW,
    )


def seg(**kw: float) -> Segmenter:
    return Segmenter(
        max_turns=int(kw.get("turns", 3)), max_chars=int(kw.get("chars", 1000)), idle_s=kw.get("idle", 1.0)
    )


def test_flushes_on_turn_count_in_order_with_every_token() -> None:
    s = seg(turns=3)
    assert s.add(msg(1), "t1", now=0) == [] and s.add(msg(2), "t2", now=0) == []
    (out,) = s.add(msg(3), "t3", now=0)
    assert [m.message_id for m in out.chunk.messages] == ["m1", "m2", "m3"]
    assert out.tokens == ["t1", "t2", "t3"]
    assert s.buffered == 0


def test_flushes_before_the_size_limit_is_passed() -> None:
    s = seg(turns=10, chars=30)
    s.add(msg(1, content="x" * 20), "t1", now=0)
    (out,) = s.add(msg(2, content="y" * 20), "t2", now=0)
    assert [m.message_id for m in out.chunk.messages] == ["m1"] and out.tokens == ["t1"]
    assert s.buffered == 1


def test_idle_gap_and_end_of_conversation_flush() -> None:
    s = seg(turns=10, idle=1.0)
    s.add(msg(1), "t1", now=0)
    s.add(msg(2, conversation="c2"), "t2", now=0.8)
    (idle,) = s.flush_idle(now=1.2)  # only c1 has been quiet for a second
    assert idle.chunk.conversation_id == "c1"
    (ended,) = s.end("b", "c2", "eoc")
    assert [m.message_id for m in ended.chunk.messages] == ["m2"] and ended.tokens == ["t2", "eoc"]
    (marker,) = s.end("b", "c3", "eoc2")  # nothing buffered: only the record to ack
    assert marker.chunk.messages == [] and marker.tokens == ["eoc2"]


def test_items_outside_a_conversation_are_chunks_at_once() -> None:
    (out,) = seg().add(msg(1, conversation=None), "t", now=0)
    assert [m.message_id for m in out.chunk.messages] == ["m1"] and out.tokens == ["t"]


def test_long_document_is_cut_on_sentences_and_acked_once() -> None:
    sentence = "The quarterly report covers revenue, hiring and the new office in Porto. "
    long = msg(1, conversation=None, content=(sentence * 12).strip())
    parts = split_long_item(long, 300)
    assert len(parts) == 3  # four 73-character sentences fit in 300
    assert all(len(p.content) <= 300 and p.content.endswith(".") for p in parts)
    assert " ".join(p.content for p in parts) == long.content
    assert [p.metadata["part"] for p in parts] == [0, 1, 2]
    out = seg(chars=300).add(long, "t", now=0)
    assert [o.tokens for o in out] == [[], [], ["t"]]
    assert all(o.chunk.messages[0].message_id == "m1" for o in out)
    # Every part's facts cite the item, and no two parts share a fact id.
    facts = [f for o in out for f in extract_local(o.chunk)]
    assert {tuple(f.source_message_ids) for f in facts} == {("m1",)}
    assert len({f.fact_id for f in facts}) == len(facts)
    assert split_long_item(msg(2, conversation=None), 300) == [msg(2, conversation=None)]


def test_each_part_is_its_own_chunk_and_names_its_part() -> None:
    sentence = "The quarterly report covers revenue, hiring and the new office in Porto. "
    long = msg(1, conversation=None, content=(sentence * 12).strip())
    out = seg(chars=300).add(long, "t", now=0)
    assert [[(p.event_id, p.part, p.parts) for p in o.chunk.message_parts] for o in out] == [
        [(long.event_id, i, 3)] for i in range(3)
    ]
    assert len({o.chunk.chunk_id for o in out}) == 3  # one message, three chunk rows
    graph_parts = [facts_event(o.chunk, extract_local(o.chunk)).message_parts for o in out]
    assert graph_parts == [o.chunk.message_parts for o in out]
    # A message that fits is not a part, whatever its own metadata says; its chunk id is as before.
    forged = msg(2, conversation=None).model_copy(update={"metadata": {"part": 0, "parts": 2}})
    (whole,) = seg().add(forged, "t", now=0)
    assert whole.chunk.message_parts == []
    assert whole.chunk.chunk_id == stable_id("b", "chunk", forged.event_id)


def test_a_long_conversation_turn_is_cut_into_parts_and_acked_once() -> None:
    sentence = "Ann described the long hike across the northern ridge. "
    long = msg(1, content=(sentence * 40).strip())
    s = seg(turns=8, chars=1000)
    out = s.add(long, "t", now=0)
    assert len(out) >= 2 and all(o.tokens == [None] for o in out)  # the record is not acked yet
    (last,) = s.flush_all()  # the last part waits for the conversation's next turns
    out.append(last)
    assert last.tokens == ["t"]
    assert all(sum(len(m.content) for m in o.chunk.messages) <= 1000 for o in out)
    assert " ".join(m.content for o in out for m in o.chunk.messages) == long.content
    assert [p.part for o in out for p in o.chunk.message_parts] == list(range(len(out)))
    assert len({o.chunk.chunk_id for o in out}) == len(out)


def test_a_chunk_is_bounded_by_the_facts_it_can_yield() -> None:
    s = Segmenter(max_turns=100, max_chars=100_000, idle_s=1.0, max_facts=10)
    three = "Ann likes red apples. Bo buys green pears. Cy eats ripe plums."  # cost 4
    assert s.add(msg(1, content=three), "t1", now=0) == []
    assert s.add(msg(2, content=three), "t2", now=0) == []
    (out,) = s.add(msg(3, content=three), "t3", now=0)  # 12 > 10: the first two go
    assert [m.message_id for m in out.chunk.messages] == ["m1", "m2"]


def test_no_derived_event_outgrows_the_broker() -> None:
    """The worst chunk a 200 KB turn of tiny sentences can make, extracted and embedded, still
    fits the broker's message size, as facts event and as graph event."""
    settings = Settings()
    budget = chunk_fact_budget(settings.max_message_bytes, EMBEDDING_DIM)
    s = Segmenter(max_turns=8, max_chars=settings.chunk_max_chars, idle_s=1.0, max_facts=budget)
    turn = ("Zorb blips quorn. " * 1_000).strip()  # chunks past the first are alike
    chunks = [p.chunk for p in s.add(msg(1, content=turn), "t", now=0)] + [p.chunk for p in s.flush_all()]
    assert len(chunks) > 3
    worst = 0
    for chunk in chunks:
        facts = extract_local(chunk)
        for fact in facts:
            fact.embedding = [-0.012345678918063641] * EMBEDDING_DIM
        event = facts_event(chunk, facts)
        graph = GraphEvent(
            bank_id=event.bank_id,
            chunk_id=event.chunk_id,
            chunk_text=event.chunk_text,
            message_event_ids=event.message_event_ids,
            facts=event.facts,
        )
        worst = max(worst, len(encode_event(chunk)), len(encode_event(event)), len(encode_event(graph)))
    assert worst <= settings.max_message_bytes * 0.8
