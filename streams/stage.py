"""The stage harness: every stream stage is a typed function behind this one loop.

A stage declares the topic it reads, the events it accepts and the events it emits, and
writes `handle(records)`. The harness consumes the topic, decodes each record to its event
type, dead-letters what fails to decode (with the reason), and hands the typed records to
the stage in batches. It owns the failure path too (STYLE 2: Faust acks a record whose agent
raised):

- a database outage is waited out, the batch retried: no record is dead-lettered for it. An
  outage is told by the error's type, and, for any other error, by asking the database: a
  connection cut mid-query can surface as an asyncpg client error of no outage type;
- any other error, or a batch running past the stage's time budget, is retried record by
  record, and a record that fails (or overruns the budget) alone is dead-lettered with the
  reason, so the partition moves on;
- a record in flight when its worker died is run alone next time, and one that kills the
  worker alone `max_attempts` times is dead-lettered (`inflight.CrashGuard`: deliveries after
  a rebalance or a clean restart do not count);
- the stage beats (`heartbeat.StageBeats`), so /health sees a dead or stuck stage.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar
from uuid import UUID

import asyncpg
import faust
from pydantic import BaseModel

from tempr.errors import InvalidEvent, TemprError
from tempr.schemas.events import ChunkEvent, FactsEvent, GraphEvent, MessageEvent, decode_event
from tempr.store.dead_letters import record_dead_letter
from tempr.store.pool import reachable
from tempr.streams.context import WorkerContext
from tempr.streams.dead_letters import dead_letter_for, deliver_dead_letter
from tempr.streams.ordered_acks import InOrderAcks

__all__ = [
    "TRANSIENT",
    "BatchRunner",
    "Record",
    "StageSpec",
    "Topics",
    "journal_ids",
    "run_stage",
]

log = logging.getLogger(__name__)

E = TypeVar("E", bound=BaseModel)

# Errors of an unreachable database: worth waiting for, never a reason to dead-letter.
TRANSIENT: tuple[type[BaseException], ...] = (
    ConnectionError,
    asyncpg.PostgresConnectionError,
    asyncpg.InterfaceError,
    asyncpg.CannotConnectNowError,
    asyncpg.TooManyConnectionsError,
    asyncpg.exceptions.OperatorInterventionError,  # the server shutting down or restarting
)


@dataclass(frozen=True)
class Topics:
    """The Faust topics of the catalog (`streams/topics.py`), one attribute each."""

    messages: faust.types.TopicT
    chunks: faust.types.TopicT
    facts: faust.types.TopicT
    graph: faust.types.TopicT
    dlq: faust.types.TopicT


@dataclass(frozen=True)
class StageSpec:
    name: str
    source: Literal["messages", "chunks", "facts", "graph", "dlq"]
    accepts: tuple[type[BaseModel], ...]
    emits: tuple[type[BaseModel], ...] = ()
    batch: int = 1
    # Longest wait for a batch to fill before what came is processed; None: the worker's
    # `batch_wait_s` (the ingest path's latency knob), a number: the stage's own.
    within: float | None = None
    # Records of other types: dead-lettered, or skipped when another stage on the same topic
    # owns them (the materializer letters what nobody can read on the graph topic).
    foreign: Literal["dead_letter", "skip"] = "dead_letter"
    # The stage acks each record itself (the segmenter acks buffered turns once chunked).
    manual_ack: bool = False
    # Subscribed only when an LLM is configured: without one the stage has nothing to do, and
    # leaving it out keeps its consumer group from holding partitions idle.
    needs_llm: bool = False


@dataclass(frozen=True)
class Record(Generic[E]):
    """A decoded event with the Faust event it came in (topic, partition, offset, ack)."""

    event: E
    source: Any
    stream: Any = None

    @property
    def message(self) -> Any:
        return self.source.message

    async def ack(self) -> None:
        await self.stream.ack(self.source)


def journal_ids(event: BaseModel) -> list[UUID]:
    """The journal rows an event covers (a dead letter for it parks them)."""
    if isinstance(event, MessageEvent):
        return [event.event_id]
    if isinstance(event, ChunkEvent):
        return [m.event_id for m in event.messages]
    if isinstance(event, FactsEvent | GraphEvent):
        return list(event.message_event_ids)
    return []


Handler = Callable[[list[Record[Any]]], Awaitable[None]]
Failed = Callable[[Record[Any], str], Awaitable[None]]
Probe = Callable[[], Awaitable[bool]]


class BatchRunner:
    """The failure path of one batch, apart from Faust so it can be tested on its own."""

    def __init__(
        self,
        handle: Handler,
        on_failure: Failed,
        *,
        budget_s: float,
        database_up: Probe | None = None,
        outage_backoff_s: float = 0.5,
    ) -> None:
        self.handle = handle
        self.on_failure = on_failure
        self.budget_s = budget_s
        self.database_up = database_up
        self.outage_backoff_s = outage_backoff_s

    async def run(self, records: list[Record[Any]]) -> None:
        delay = self.outage_backoff_s

        async def wait_out(exc: BaseException) -> None:
            nonlocal delay
            log.warning("database unavailable (%r); retrying the batch in %.1fs", exc, delay)
            await asyncio.sleep(delay)
            delay = min(delay * 2, 10.0)

        while True:
            failure: Exception
            try:
                await asyncio.wait_for(self.handle(records), timeout=self.budget_s)
                return
            except TimeoutError as exc:
                failure = exc
                reason = (
                    f"took longer than {self.budget_s:g}s, the stage's time budget per record "
                    "(TEMPR_STAGE_RECORD_TIMEOUT_S)"
                )
            except TRANSIENT as exc:
                await wait_out(exc)
                continue
            except Exception as exc:  # one bad record must not stop the pipeline
                failure = exc
                expected = isinstance(exc, TemprError)  # a refusal, not a bug: no traceback
                reason = str(exc) if expected else repr(exc)
                log.warning(
                    "stage failed on a batch of %d: %s",
                    len(records),
                    reason,
                    exc_info=None if expected else exc,
                )
            if self.database_up is not None and not await self.database_up():
                await wait_out(failure)  # the record is not at fault: the database is gone
                continue
            if len(records) == 1:
                await self.on_failure(records[0], reason)
                return
            # One poisonous record must not sink its batch-mates: each alone, once.
            for record in records:
                await self.run([record])
            return


async def run_stage(
    stream: Any, spec: StageSpec, ctx: WorkerContext, topics: Topics, handle: Handler
) -> None:
    """The agent's body: decode, batch, handle, dead-letter; beats all along."""
    await ctx.wait_ready()
    beats = ctx.beats.stage(spec.name)

    async def dead_letter(record: Record[Any], reason: str) -> None:
        letter = dead_letter_for(
            stage=spec.name, message=record.message, error=reason, message_event_ids=journal_ids(record.event)
        )
        if spec.source == "dlq":  # never back onto the topic it failed on
            await record_dead_letter(ctx.db, letter)
        else:
            await deliver_dead_letter(topics.dlq, ctx.db, letter)
        beats.failed += 1
        if spec.manual_ack:
            await record.ack()

    runner = BatchRunner(
        handle,
        dead_letter,
        budget_s=ctx.settings.stage_record_timeout_s,
        database_up=lambda: reachable(ctx.db),
    )

    async def one_batch(events: Sequence[Any], acking: Any) -> None:
        records: list[Record[Any]] = []
        for event in events:
            try:
                decoded = decode_event(event.value)
                if not isinstance(decoded, spec.accepts):
                    raise InvalidEvent(f"unexpected {decoded.event_type} event on the {spec.source} topic")
            except InvalidEvent as exc:
                if spec.foreign == "skip":
                    if spec.manual_ack:
                        await acking.ack(event)
                    continue
                await dead_letter(Record(event=_Undecoded(), source=event, stream=acking), str(exc))
                continue
            records.append(Record(event=decoded, source=event, stream=acking))
        if not records:
            return
        with beats.busy():
            await ctx.guard.run(ctx.db, spec.name, records, _ids_of, runner.run, dead_letter)
        beats.processed += len(records)

    if spec.manual_ack:
        acks = InOrderAcks(stream)  # the stage's acks reach Faust in each partition's order
        async for event in stream.noack().events():
            acks.arrived(event)
            await one_batch([event], acks)
    else:
        within = ctx.settings.batch_wait_s if spec.within is None else spec.within
        async for events in stream.take_events(spec.batch, within=within):
            await one_batch(events, stream)


def _ids_of(record: Record[Any]) -> list[UUID]:
    return journal_ids(record.event)


class _Undecoded(BaseModel):
    """Stands in for the event of a record that could not be decoded."""
