"""Extractor: chunks → facts with embeddings (tempr.chunks.v1 → tempr.facts.v1).

With an LLM configured, facts come from the LLM (structured output); otherwise from the
deterministic local extractor. Embeddings are computed for the whole batch in one call.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime
from typing import Any

import faust

from tempr.schemas.events import ChunkEvent, ExtractedFact, FactsEvent, MessageEvent, encode_event
from tempr.store import messages
from tempr.streams.context import WorkerContext
from tempr.streams.stage import Record, StageSpec, Topics, run_stage
from tempr.streams.topics import bank_key

__all__ = [
    "SPEC",
    "Extractor",
    "chunk_text",
    "dated_text",
    "embedding_text",
    "facts_event",
    "read_history",
    "register",
]

log = logging.getLogger(__name__)

Extractor = Callable[[ChunkEvent], Awaitable[list[ExtractedFact]]]


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
    from tempr.agents.extraction.local import extract_local

    if ctx.settings.llm_configured:
        from tempr.agents.extraction.llm import extract_with_llm

        llm = ctx.llm
        assert llm is not None  # llm_configured

        async def with_llm(chunk: ChunkEvent) -> list[ExtractedFact]:
            return await extract_with_llm(chunk, llm)

        return with_llm

    one_at_a_time = asyncio.Lock()  # spaCy's pipeline is not shared across threads

    async def local(chunk: ChunkEvent) -> list[ExtractedFact]:
        history = await read_history(ctx.db, chunk)
        # CPU-bound (spaCy): off the event loop so timers and commits keep running.
        async with one_at_a_time:
            return await asyncio.to_thread(extract_local, chunk, history)

    return local


SPEC = StageSpec(name="extract_facts", source="chunks", accepts=(ChunkEvent,), emits=(FactsEvent,), batch=32)


def register(app: faust.App, topics: Topics, ctx: WorkerContext) -> None:
    state: dict[str, Any] = {}

    async def handle(records: list[Record[ChunkEvent]]) -> None:
        extractor = state.get("extractor") or state.setdefault("extractor", choose_extractor(ctx))
        in_flight = state.get("in_flight") or state.setdefault(
            "in_flight", asyncio.Semaphore(ctx.settings.llm_concurrency)
        )

        async def one(chunk: ChunkEvent) -> FactsEvent:
            async with in_flight:
                return facts_event(chunk, await extractor(chunk))

        # Many chunks in flight at once (LLM latency); results keep the input order.
        outputs = await asyncio.gather(*(one(r.event) for r in records))
        await embed_facts(ctx.embeddings, [f for out in outputs for f in out.facts])
        for out in outputs:
            await (await topics.facts.send(key=bank_key(out.bank_id), value=encode_event(out)))

    @app.agent(getattr(topics, SPEC.source), name=SPEC.name)
    async def extract_facts(stream: Any) -> None:
        await run_stage(stream, SPEC, ctx, topics, handle)
