"""Segmenter: turns of a conversation → chunks (tempr.messages.v1 → tempr.chunks.v1).

Turns are buffered per (bank, conversation) and flushed on a turn count, a size limit, an
idle gap or an explicit end-of-conversation event. Items outside a conversation are chunks
on their own. A chunk is also bounded by the facts it can yield (about one per sentence, each
with its embedding), so that no chunk, facts or graph event outgrows the broker's message
size; a turn or item too long for one chunk is cut into parts on sentence boundaries. A buffered record is acked only once its chunk is sent, and acks reach
Faust in partition order (`streams/ordered_acks.py`), so the committed offset never passes a
turn that exists only in this process's memory.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass, field
from typing import Any

import faust
from aiokafka.errors import MessageSizeTooLargeError

from tempr.agents.extraction.sentences import sentence_spans
from tempr.errors import ForgottenMessage
from tempr.schemas.events import (
    BankDeleted,
    ChunkEvent,
    EndOfConversation,
    MessageEvent,
    MessagePart,
    encode_event,
)
from tempr.schemas.ids import stable_id
from tempr.store import banks, messages
from tempr.streams.context import WorkerContext
from tempr.streams.control import control_key, verify_tombstone
from tempr.streams.dead_letters import dead_letter_for, deliver_dead_letter
from tempr.streams.stage import Record, StageSpec, Topics, journal_ids, run_stage
from tempr.streams.topics import conversation_key

__all__ = [
    "SPEC",
    "PendingChunk",
    "Segmenter",
    "chunk_fact_budget",
    "fact_cost",
    "register",
    "split_long_item",
]

log = logging.getLogger(__name__)


@dataclass
class PendingChunk:
    chunk: ChunkEvent
    tokens: list[Any] = field(default_factory=list)  # whatever the caller acks after sending


@dataclass
class _Buffer:
    messages: list[MessageEvent] = field(default_factory=list)
    tokens: list[Any] = field(default_factory=list)
    parts: list[MessagePart] = field(default_factory=list)
    chars: int = 0
    facts: int = 0
    last_seen: float = 0.0


# Bytes of one extracted fact in a facts or graph event beyond its embedding: text, ids,
# entities, links, metadata; generous, measured at about a third of this for chat turns.
_FACT_OVERHEAD_BYTES = 3000
# Bytes of one embedding component as JSON ("-0.012345678918063641,").
_EMBEDDING_COMPONENT_BYTES = 24


def chunk_fact_budget(max_message_bytes: int, embedding_dim: int) -> int:
    """How many facts one chunk may yield so that its facts and graph events stay within
    60% of the broker's message size (the rest for the chunk's text and its entities)."""
    per_fact = embedding_dim * _EMBEDDING_COMPONENT_BYTES + _FACT_OVERHEAD_BYTES
    return max(8, int(max_message_bytes * 0.6) // per_fact)


def fact_cost(text: str) -> int:
    """Facts a text may yield: one per sentence, plus the exchange it closes."""
    return len(sentence_spans(text)) + 1


class Segmenter:
    """Pure buffering logic; `tokens` ride along so the caller can ack what was flushed."""

    def __init__(self, *, max_turns: int, max_chars: int, idle_s: float, max_facts: int = 50) -> None:
        self.max_turns = max_turns
        self.max_chars = max_chars
        self.max_facts = max_facts
        self.idle_s = idle_s
        self._buffers: dict[tuple[str, str], _Buffer] = {}

    def add(
        self, message: MessageEvent, token: Any = None, *, now: float | None = None
    ) -> list[PendingChunk]:
        now = time.monotonic() if now is None else now
        cost = fact_cost(message.content)
        if len(message.content) <= self.max_chars and cost <= self.max_facts:
            pieces, costs = [message], [cost]
        else:
            pieces = split_long_item(message, self.max_chars, self.max_facts)
            costs = [fact_cost(p.content) for p in pieces]
        parts: list[MessagePart | None] = (
            [MessagePart(event_id=message.event_id, part=i, parts=len(pieces)) for i in range(len(pieces))]
            if len(pieces) > 1
            else [None]
        )
        if message.conversation_id is None:
            # The record is acked once, after its last piece is sent.
            return [
                PendingChunk(
                    make_chunk([piece], [part] if part else []), [token] if i == len(pieces) - 1 else []
                )
                for i, (piece, part) in enumerate(zip(pieces, parts, strict=True))
            ]
        out: list[PendingChunk] = []
        for i, (piece, piece_cost, part) in enumerate(zip(pieces, costs, parts, strict=True)):
            out.extend(self._buffer(piece, piece_cost, token if i == len(pieces) - 1 else None, now, part))
        return out

    def _buffer(
        self, message: MessageEvent, cost: int, token: Any, now: float, part: MessagePart | None
    ) -> list[PendingChunk]:
        assert message.conversation_id is not None
        key = (message.bank_id, message.conversation_id)
        buf = self._buffers.setdefault(key, _Buffer())
        out: list[PendingChunk] = []
        if buf.messages and (
            buf.chars + len(message.content) > self.max_chars or buf.facts + cost > self.max_facts
        ):
            out.append(self._take(key))
            buf = self._buffers.setdefault(key, _Buffer())
        buf.messages.append(message)
        buf.tokens.append(token)
        if part is not None:
            buf.parts.append(part)
        buf.chars += len(message.content)
        buf.facts += cost
        buf.last_seen = now
        if len(buf.messages) >= self.max_turns:
            out.append(self._take(key))
        return out

    def end(self, bank_id: str, conversation_id: str, token: Any = None) -> list[PendingChunk]:
        key = (bank_id, conversation_id)
        if key not in self._buffers:
            return [PendingChunk(_empty_marker(), [token])] if token is not None else []
        pending = self._take(key)
        pending.tokens.append(token)
        return [pending]

    def flush_idle(self, *, now: float | None = None) -> list[PendingChunk]:
        now = time.monotonic() if now is None else now
        idle = [k for k, b in self._buffers.items() if now - b.last_seen >= self.idle_s]
        return [self._take(k) for k in idle]

    def drop_bank(self, bank_id: str) -> list[Any]:
        """Forget a deleted bank's buffered turns; returns their tokens (to ack)."""
        keys = [k for k in self._buffers if k[0] == bank_id]
        return [t for k in keys for t in self._buffers.pop(k).tokens]

    def flush_all(self) -> list[PendingChunk]:
        return [self._take(k) for k in list(self._buffers)]

    @property
    def buffered(self) -> int:
        return sum(len(b.messages) for b in self._buffers.values())

    def _take(self, key: tuple[str, str]) -> PendingChunk:
        buf = self._buffers.pop(key)
        return PendingChunk(make_chunk(buf.messages, buf.parts), buf.tokens)


def split_long_item(message: MessageEvent, max_chars: int, max_facts: int = 50) -> list[MessageEvent]:
    """A turn or document longer than a chunk becomes parts cut on sentence boundaries.

    Each part keeps the message's id (provenance stays the item) and carries
    `metadata.part`/`parts`, which extractors fold into their fact ids so parts never collide.
    A part holds at most `max_chars` characters and `max_facts - 1` sentences; a single
    sentence longer than `max_chars` is cut at the last space before the limit (or at it).
    """
    text = message.content
    if len(text) <= max_chars and fact_cost(text) <= max_facts:
        return [message]
    groups: list[tuple[int, int]] = []
    sentences = 0
    for start, end in _bounded_spans(sentence_spans(text), text, max_chars):
        if groups and end - groups[-1][0] <= max_chars and sentences + 1 < max_facts:
            groups[-1] = (groups[-1][0], end)
            sentences += 1
        else:
            groups.append((start, end))
            sentences = 1
    pieces = [text[a:b].strip() for a, b in groups]
    pieces = [p for p in pieces if p]
    if len(pieces) <= 1:
        return [message]
    return [
        message.model_copy(
            update={"content": piece, "metadata": {**message.metadata, "part": i, "parts": len(pieces)}}
        )
        for i, piece in enumerate(pieces)
    ]


def _bounded_spans(spans: list[tuple[int, int]], text: str, max_chars: int) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for start, end in spans:
        while end - start > max_chars:
            cut = text.rfind(" ", start + 1, start + max_chars)
            cut = cut if cut > start else start + max_chars
            out.append((start, cut))
            start = cut
        out.append((start, end))
    return out


def _empty_marker() -> ChunkEvent:
    # Never sent: an end-of-conversation with nothing buffered only needs its ack.
    return ChunkEvent.model_construct(messages=[])


def make_chunk(messages: list[MessageEvent], parts: Sequence[MessagePart] = ()) -> ChunkEvent:
    first = messages[0]
    # The parts of one message share its event id: their numbers keep the chunks apart.
    numbered = [f"{p.event_id}:{p.part}" for p in parts]
    return ChunkEvent(
        chunk_id=stable_id(first.bank_id, "chunk", *(m.event_id for m in messages), *numbered),
        bank_id=first.bank_id,
        conversation_id=first.conversation_id,
        document_id=first.document_id,
        messages=messages,
        message_parts=list(parts),
    )


async def _apply_tombstone(pool: Any, event: BankDeleted) -> None:
    """Idempotent. The API deleted the rows already; on a replay of the log into a fresh store
    this is what removes the bank. A bank used again since the deletion keeps its new life."""
    async with pool.acquire() as conn, conn.transaction():
        if await banks.used_since(conn, event.bank_id, event.deleted_at):
            await banks.record_tombstone(conn, event.bank_id, event.deleted_at)
        else:
            await banks.delete_bank(conn, event.bank_id, deleted_at=event.deleted_at)


SPEC = StageSpec(
    name="segment_messages",
    source="messages",
    accepts=(MessageEvent, EndOfConversation, BankDeleted),
    emits=(ChunkEvent,),
    manual_ack=True,
)


def _too_large(exc: BaseException) -> bool:
    return isinstance(exc, MessageSizeTooLargeError) or isinstance(exc.__cause__, MessageSizeTooLargeError)


def register(app: faust.App, topics: Topics, ctx: WorkerContext) -> None:
    settings = ctx.settings
    segmenter = Segmenter(
        max_turns=settings.chunk_max_turns,
        max_chars=settings.chunk_max_chars,
        idle_s=settings.chunk_idle_s,
    )

    def fact_budget() -> int:
        # The embedding dimension is known once the worker context loaded the model.
        dimension = ctx.embedder.dimension if ctx.embedder is not None else 384
        return chunk_fact_budget(settings.max_message_bytes, dimension)

    key = control_key(settings)

    async def emit(pending: list[PendingChunk]) -> None:
        # Every chunk sent, then each delivery awaited: one broker round trip per chunk in turn
        # capped a live stream, where every turn is a chunk of its own.
        sent: list[tuple[PendingChunk, Awaitable[Any] | None, Exception | None]] = []
        for item in pending:
            future, error = None, None
            if item.chunk.messages:
                try:
                    future = await topics.chunks.send(
                        key=conversation_key(item.chunk.bank_id, item.chunk.conversation_id),
                        value=encode_event(item.chunk),
                    )
                except Exception as exc:
                    error = exc
            sent.append((item, future, error))
        for item, future, error in sent:
            if future is not None:
                try:
                    await future
                except Exception as exc:
                    error = exc
            if error is not None:
                await dead_letter_chunk(item, error)
            for record in item.tokens:
                if record is not None:
                    await record.ack()

    async def dead_letter_chunk(item: PendingChunk, exc: Exception) -> None:
        # Also reached from the idle timer, outside the harness. The chunk's turns left the
        # buffer: each is dead-lettered (replayable) and acked, or its partition's commits
        # would wait on it for good (`ordered_acks`).
        reason = (
            f"its chunk is too large for the broker: {exc!r}"
            if _too_large(exc)
            else f"its chunk could not be sent to the broker: {exc!r}"
        )
        for record in item.tokens:
            if record is not None:
                await deliver_dead_letter(
                    topics.dlq,
                    ctx.db,
                    dead_letter_for(
                        stage=SPEC.name,
                        message=record.message,
                        error=reason,
                        message_event_ids=journal_ids(record.event),
                    ),
                )

    async def handle(records: list[Record[MessageEvent | EndOfConversation | BankDeleted]]) -> None:
        segmenter.max_facts = fact_budget()
        for record in records:
            event = record.event
            if isinstance(event, MessageEvent):
                # Journaled here too, so messages produced straight to the topic get the same
                # redelivery as retains; a deleted bank's old messages stop here.
                receipt = await messages.journal_from_log(ctx.db, event)
                if receipt.forgotten_at is not None and not receipt.stale:
                    raise ForgottenMessage(
                        f"message {event.message_id!r} of bank {event.bank_id!r} was forgotten at "
                        f"{receipt.forgotten_at.isoformat()} (tombstone): it is not stored again"
                    )
                # Deliveries are not attempts (a rebalance redelivers): the harness counts
                # the crashes a record causes and parks it (`streams/inflight.py`).
                if receipt.stale or receipt.parked:
                    await record.ack()
                else:
                    await emit(segmenter.add(event, record))
            elif isinstance(event, EndOfConversation):
                await emit(segmenter.end(event.bank_id, event.conversation_id, record))
            else:
                verify_tombstone(event, key)
                await _apply_tombstone(ctx.db, event)
                for token in [*segmenter.drop_bank(event.bank_id), record]:
                    if token is not None:
                        await token.ack()

    @app.agent(getattr(topics, SPEC.source), name=SPEC.name)
    async def segment_messages(stream: Any) -> None:
        await run_stage(stream, SPEC, ctx, topics, handle)

    @app.timer(interval=max(0.2, settings.chunk_idle_s / 2))
    async def flush_idle_conversations() -> None:
        if segmenter.buffered:
            await emit(segmenter.flush_idle())
