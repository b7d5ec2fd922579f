"""Extractor: chunks → facts with embeddings (tempr.chunks.v1 → tempr.facts.v1).

With an LLM configured, facts come from the LLM (structured output); otherwise from the
deterministic local extractor. Embeddings are computed for the whole batch in one call.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime
from functools import partial
from typing import Any

import faust

from tempr.agents.extraction.corrections import correction_event, keep_corrections
from tempr.agents.extraction.lineage import along_lineage, in_bank, messages_in_bank
from tempr.schemas.events import (
    ChunkEvent,
    ExtractedFact,
    FactCorrection,
    FactsEvent,
    MessageEvent,
    encode_event,
)
from tempr.store import banks, corrections, messages
from tempr.streams.context import WorkerContext
from tempr.streams.stage import Record, StageSpec, Topics, run_stage
from tempr.streams.topics import bank_key

__all__ = [
    "SPEC",
    "Extractor",
    "chunk_text",
    "dated_text",
    "embedding_text",
    "extract_and_embed",
    "facts_event",
    "read_history",
    "register",
]

log = logging.getLogger(__name__)

# (chunk, the bank whose name fact ids derive from: the chunk's own, or the first ancestor
# of a bank imported under another id; see extraction/lineage.py)
Extractor = Callable[[ChunkEvent, str], Awaitable[list[ExtractedFact]]]


def embedding_text(fact: ExtractedFact) -> str:
    """The fact as embedded: its text with a readable date, so time words can match."""
    return dated_text(fact.text, fact.occurred_start or fact.mentioned_at)


def dated_text(text: str, when: datetime | None) -> str:
    return f"{text} ({when:%-d %B %Y})" if when else text


def chunk_text(chunk: ChunkEvent) -> str:
    return "\n".join(f"{m.speaker}: {m.content}" if m.speaker else m.content for m in chunk.messages)


def facts_event(chunk: ChunkEvent, facts: list[ExtractedFact]) -> FactsEvent:
    return FactsEvent(
        bank_id=chunk.bank_id,
        chunk_id=chunk.chunk_id,
        chunk_text=chunk_text(chunk),
        conversation_id=chunk.conversation_id,
        document_id=chunk.document_id,
        message_event_ids=[m.event_id for m in chunk.messages],
        message_parts=chunk.message_parts,
        facts=facts,
    )


async def embed_facts(embedder: Any, facts: Sequence[ExtractedFact]) -> None:
    vectors = await embedder.aencode([embedding_text(f) for f in facts])
    for fact, vector in zip(facts, vectors, strict=True):
        fact.embedding = vector.tolist()


async def read_history(pool: Any, chunk: ChunkEvent) -> list[MessageEvent] | None:
    """The conversation's turns from the journal around the chunk (every turn is journaled
    before it is chunked), so a reply meets the turn it answers across chunk boundaries."""
    if not chunk.conversation_id:
        return None
    from tempr.agents.extraction.local import SPEAKER_WINDOW

    return await messages.conversation_history(
        pool,
        chunk.bank_id,
        chunk.conversation_id,
        [m.event_id for m in chunk.messages],
        before=SPEAKER_WINDOW - 1,
    )


def choose_extractor(ctx: WorkerContext) -> Extractor:
    from tempr.agents.extraction.local import ParseCache, extract_local_many
    from tempr.inference.coalesce import Coalescer

    if ctx.settings.llm_configured:
        from tempr.agents.extraction.llm import extract_with_llm

        llm = ctx.llm
        assert llm is not None  # llm_configured

        async def with_llm(chunk: ChunkEvent, id_bank: str) -> list[ExtractedFact]:
            return await extract_with_llm(in_bank(chunk, id_bank), llm)

        return with_llm

    # CPU-bound (spaCy): in a thread, off the event loop so timers and commits keep running;
    # chunks that wait meanwhile are extracted together.
    parses = ParseCache(ctx.settings.extract_parse_cache) if ctx.settings.extract_parse_cache else None
    coalescer = Coalescer(partial(extract_local_many, parses=parses))

    async def local(chunk: ChunkEvent, id_bank: str) -> list[ExtractedFact]:
        history = await read_history(ctx.db, chunk)
        if history is not None:
            history = messages_in_bank(history, id_bank)
        return await coalescer.run((in_bank(chunk, id_bank), history))

    return local


SPEC = StageSpec(
    name="extract_facts",
    source="chunks",
    accepts=(ChunkEvent, FactCorrection),
    emits=(FactsEvent,),
    batch=32,
)


async def _with_corrections(pool: Any, bank_id: str, facts: list[ExtractedFact]) -> list[ExtractedFact]:
    """A re-extracted fact (a replay) takes the latest correction it had."""
    kept = await corrections.applied_corrections_for(pool, bank_id, [f.fact_id for f in facts])
    return keep_corrections(facts, kept) if kept else facts


async def _correction(pool: Any, event: FactCorrection) -> FactsEvent | None:
    found = await corrections.to_apply(pool, event.correction_id)
    return None if found is None else correction_event(*found)


async def extract_and_embed(
    chunks: Sequence[ChunkEvent],
    extract: Callable[[ChunkEvent], Awaitable[list[ExtractedFact]]],
    embedder: Any,
    emit: Callable[[FactsEvent], Awaitable[None]],
    *,
    group_facts: int,
) -> None:
    """Extract every chunk, embed its facts, emit each chunk's facts in input order.

    `group_facts`: facts of finished chunks sent to the model at once, at most; the worker
    passes one model batch (`embedding_batch_size`). A bigger group runs several batches before
    any chunk of it moves on, so the resolver and the materializer wait, and the last group's
    wait is the ingest's tail.

    The stages overlap: the facts of every chunk extracted so far are embedded together while
    later chunks are still being extracted, and a chunk is emitted once it and all before it
    are embedded. A failure anywhere cancels the rest (the harness then retries record by record;
    what was emitted is emitted again, and the ids make that harmless).
    """
    events: list[FactsEvent | None] = [None] * len(chunks)
    embedded = [asyncio.Event() for _ in chunks]
    ready: deque[int] = deque()
    more = asyncio.Event()

    async def extract_one(i: int) -> None:
        events[i] = facts_event(chunks[i], await extract(chunks[i]))
        ready.append(i)
        more.set()

    def facts_of(i: int) -> list[ExtractedFact]:
        event = events[i]
        assert event is not None
        return event.facts

    async def embed_all() -> None:
        remaining = len(chunks)
        while remaining:
            while not ready:
                more.clear()
                await more.wait()
            # Whole chunks, as many as fit in one group (a bigger chunk goes alone).
            group = [ready.popleft()]
            size = len(facts_of(group[0]))
            while ready and size + len(facts_of(ready[0])) <= group_facts:
                group.append(ready.popleft())
                size += len(facts_of(group[-1]))
            facts = [f for i in group for f in facts_of(i)]
            if facts:
                await embed_facts(embedder, facts)
            for i in group:
                embedded[i].set()
            remaining -= len(group)

    async def emit_in_order() -> None:
        for i, done in enumerate(embedded):
            await done.wait()
            event = events[i]
            assert event is not None
            await emit(event)

    try:
        async with asyncio.TaskGroup() as group:
            for i in range(len(chunks)):
                group.create_task(extract_one(i))
            group.create_task(embed_all())
            group.create_task(emit_in_order())
    except BaseExceptionGroup as failed:
        # The harness tells a database outage (waited out) from a bad record by the error's type.
        raise _first(failed) from None


def _first(group: BaseExceptionGroup) -> BaseException:
    first = group.exceptions[0]
    return _first(first) if isinstance(first, BaseExceptionGroup) else first


def register(app: faust.App, topics: Topics, ctx: WorkerContext) -> None:
    state: dict[str, Any] = {}

    async def handle(records: list[Record[ChunkEvent | FactCorrection]]) -> None:
        extractor = state.get("extractor") or state.setdefault("extractor", choose_extractor(ctx))
        in_flight = state.get("in_flight") or state.setdefault(
            "in_flight", asyncio.Semaphore(ctx.settings.llm_concurrency)
        )

        async def extract(chunk: ChunkEvent) -> list[ExtractedFact]:
            lineage = lineages.get(chunk.bank_id, [])
            async with in_flight:  # many chunks in flight at once (LLM latency)
                found = await extractor(chunk, lineage[0] if lineage else chunk.bank_id)
                return await _with_corrections(
                    ctx.db, chunk.bank_id, along_lineage(found, lineage, chunk.bank_id)
                )

        sent: list[Awaitable[Any]] = []

        async def emit(out: FactsEvent) -> None:
            # Deliveries are awaited together at the end of the batch, not one round trip each.
            sent.append(await topics.facts.send(key=bank_key(out.bank_id), value=encode_event(out)))

        chunks = [r.event for r in records if isinstance(r.event, ChunkEvent)]
        lineages = await banks.id_lineages(ctx.db, (c.bank_id for c in chunks)) if chunks else {}
        await extract_and_embed(
            chunks, extract, ctx.embeddings, emit, group_facts=ctx.settings.embedding_batch_size
        )
        fixes = [
            out
            for r in records
            if isinstance(r.event, FactCorrection)
            if (out := await _correction(ctx.db, r.event))
        ]
        await embed_facts(ctx.embeddings, [f for out in fixes for f in out.facts])
        for out in fixes:
            await emit(out)
        await asyncio.gather(*sent)

    @app.agent(getattr(topics, SPEC.source), name=SPEC.name)
    async def extract_facts(stream: Any) -> None:
        await run_stage(stream, SPEC, ctx, topics, handle)
