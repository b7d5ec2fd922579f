"""Extractor: chunks → facts with embeddings (tempr.chunks.v1 → tempr.facts.v1).

With an LLM configured, facts come from the LLM (structured output); otherwise from the
deterministic local extractor. Embeddings are computed for the whole batch in one call.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from tempr.errors import InvalidEvent, UpstreamLLMError
from tempr.schemas.events import (
    ChunkEvent,
    ExtractedFact,
    FactsEvent,
    MessageEvent,
    decode_event,
    encode_event,
)
from tempr.store import messages
from tempr.streams.dead_letters import send_dead_letter
from tempr.streams.topics import bank_key

__all__ = ["Extractor", "chunk_text", "embedding_text", "facts_event", "read_history", "register"]

log = logging.getLogger(__name__)

Extractor = Callable[[ChunkEvent], Awaitable[list[ExtractedFact]]]


def embedding_text(fact: ExtractedFact) -> str:
    """The fact as embedded: its text with a readable date, so time words can match."""
    when = fact.occurred_start or fact.mentioned_at
    return f"{fact.text} ({when:%-d %B %Y})" if when else fact.text


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


def choose_extractor(ctx: Any) -> Extractor:
    from tempr.agents.extraction.local import extract_local

    if ctx.settings.llm_configured:
        from tempr.agents.extraction.llm import extract_with_llm

        async def with_llm(chunk: ChunkEvent) -> list[ExtractedFact]:
            return await extract_with_llm(chunk, ctx.llm)

        return with_llm

    one_at_a_time = asyncio.Lock()  # spaCy's pipeline is not shared across threads

    async def local(chunk: ChunkEvent) -> list[ExtractedFact]:
        history = await read_history(ctx.db, chunk)
        # CPU-bound (spaCy): off the event loop so timers and commits keep running.
        async with one_at_a_time:
            return await asyncio.to_thread(extract_local, chunk, history)

    return local


def register(app: Any, topics: Any, ctx: Any) -> None:
    state: dict[str, Extractor] = {}

    @app.agent(topics.chunks, name="extract_facts")
    async def extract_facts(stream: Any) -> None:
        await ctx.wait_ready()
        extractor = state.setdefault("extractor", choose_extractor(ctx))
        in_flight = asyncio.Semaphore(ctx.settings.llm_concurrency)

        async def one(event: Any) -> FactsEvent | None:
            try:
                chunk = decode_event(event.value)
                if not isinstance(chunk, ChunkEvent):
                    raise InvalidEvent(f"unexpected {chunk.event_type} event on the chunks topic")
                async with in_flight:
                    return facts_event(chunk, await extractor(chunk))
            except (InvalidEvent, UpstreamLLMError) as exc:
                await send_dead_letter(
                    topics.dlq, stage="extract_facts", message=event.message, error=str(exc)
                )
            except Exception as exc:
                log.exception("extraction failed")
                await send_dead_letter(
                    topics.dlq, stage="extract_facts", message=event.message, error=repr(exc)
                )
            return None

        async for events in stream.take_events(32, within=0.2):
            # Many chunks in flight at once (LLM latency); results keep the input order.
            outputs = [out for out in await asyncio.gather(*(one(e) for e in events)) if out is not None]
            await embed_facts(ctx.embeddings, [f for out in outputs for f in out.facts])
            for out in outputs:
                fut = await topics.facts.send(key=bank_key(out.bank_id), value=encode_event(out))
                await fut
