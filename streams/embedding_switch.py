"""Switch an installation to another embedding model (`tempr migrate --embedding-model NAME`).

1. The model is loaded (or its endpoint probed) for its dimension.
2. In one transaction: the column and its indexes are re-sized when the dimension differs, and
   every bank is replayed as `POST /v1/banks/{b}/replay` does (its message-made facts cleared,
   its journal entries reopened).
3. What replay keeps (opinions, and observations resting on none of the replayed facts) is
   embedded again with the new model.
4. The reopened messages are published when a broker is configured; otherwise (the embedded
   runtime, not running now) `tempr up` publishes them at start-up, and the sweeper would too.
The workers and the API must then run with the same model settings: start-up refuses a model
whose dimension does not fit the column.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from uuid import UUID

import asyncpg

from tempr.inference.embeddings import Embedder, embedder_from_settings
from tempr.settings import Settings
from tempr.store import embedding_column, replay
from tempr.store.migrate import apply_migrations
from tempr.store.pool import create_pool
from tempr.streams.embedded import EmbeddedPostgres
from tempr.streams.publisher import Publisher, create_producer

__all__ = ["SwitchReport", "switch_embedding_model"]

log = logging.getLogger(__name__)

_REEMBED_BATCH = 256


@dataclass(frozen=True)
class SwitchReport:
    model: str
    dimension: int
    previous_dimension: int | None
    resized: bool
    banks: int
    messages_reopened: int
    facts_removed: int
    reembedded: int
    published: int | None  # None: left to `tempr up` / the sweeper


async def _replay_all(conn: asyncpg.Connection) -> tuple[int, int, int]:
    banks = await replay.live_banks(conn)
    reopened = removed = 0
    for bank_id in banks:
        await replay.lock_bank_replay(conn, bank_id)
        events = [event for _, event in await replay.messages_to_replay(conn, bank_id, None)]
        cleared = await replay.clear_derived(conn, bank_id, [e.message_id for e in events])
        await replay.reopen_messages(conn, [e.event_id for e in events])
        reopened += len(events)
        removed += cleared.facts
    return len(banks), reopened, removed


async def _reembed_kept(pool: asyncpg.Pool, embedder: Embedder) -> int:
    """Every fact left after the replay's clearing, in id order (keyset), with the new model."""
    done, after = 0, UUID(int=0)
    while units := await embedding_column.units_after(pool, after, _REEMBED_BATCH):
        vectors = await embedder.aencode([text for _, text in units])
        await embedding_column.set_embeddings(pool, [uid for uid, _ in units], list(vectors))
        done += len(units)
        after = units[-1][0]
    return done


async def _publish_reopened(pool: asyncpg.Pool, bootstrap: str) -> int:
    producer = create_producer(bootstrap)
    await producer.start()
    try:
        publisher, total = Publisher(pool, producer), 0
        while count := await publisher.redeliver(older_than_s=0):
            total += count
        return total
    finally:
        await producer.stop()


async def _switch(settings: Settings, dsn: str, embedder: Embedder) -> SwitchReport:
    await apply_migrations(dsn)
    pool = await create_pool(dsn, max_size=2)
    try:
        async with pool.acquire() as conn, conn.transaction():
            previous = await embedding_column.embedding_dimension(conn)
            resized = await embedding_column.resize_embedding_column(conn, embedder.dimension)
            await embedding_column.record_embedding_model(
                conn, embedder.model_name, embedder.dimension, replace=True
            )
            banks, reopened, removed = await _replay_all(conn)
        reembedded = await _reembed_kept(pool, embedder)
        published = None
        if settings.kafka_bootstrap:
            try:
                published = await _publish_reopened(pool, settings.kafka_bootstrap)
            except Exception as exc:  # reopened entries stay in the journal: the sweeper sends them
                log.warning("could not publish the replayed messages now, left to the sweeper: %r", exc)
        return SwitchReport(
            model=embedder.model_name,
            dimension=embedder.dimension,
            previous_dimension=previous,
            resized=resized,
            banks=banks,
            messages_reopened=reopened,
            facts_removed=removed,
            reembedded=reembedded,
            published=published,
        )
    finally:
        await pool.close()


def switch_embedding_model(settings: Settings, model: str) -> SwitchReport:
    """Blocking: loads the model, starts the embedded Postgres when no database is configured."""
    embedder = embedder_from_settings(settings, model, queries=False)
    if settings.database_url:
        return asyncio.run(_switch(settings, settings.database_url, embedder))
    postgres = EmbeddedPostgres(settings.pg_dir)
    try:
        return asyncio.run(_switch(settings, postgres.start(), embedder))
    finally:
        postgres.stop()
