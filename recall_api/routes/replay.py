"""Replay a bank: rebuild its derived memory from the journaled raw messages.

For after a change of extractor, embedding model or chunking: the facts made from the
messages are deleted and the messages go through the current pipeline again.
"""

from __future__ import annotations

import logging

from fastapi import APIRouter, status

from tempr.errors import NotFound
from tempr.recall_api.deps import BankIdPath, PublisherDep
from tempr.schemas.api import ConsistencyToken, ErrorBody
from tempr.schemas.operations import BankReplayRequest, BankReplayResponse
from tempr.store import bank_locks, replay
from tempr.streams.topics import MESSAGES

__all__ = ["router"]

log = logging.getLogger(__name__)

router = APIRouter(prefix="/v1/banks/{bank_id}", tags=["operations"])

_PUBLISH_BATCH = 1000


@router.post(
    "/replay",
    status_code=status.HTTP_202_ACCEPTED,
    response_model=BankReplayResponse,
    responses={404: {"model": ErrorBody, "description": "No such bank"}},
    summary="Rebuild a bank's facts by sending its stored messages through the pipeline again",
)
async def replay_bank(
    bank_id: BankIdPath, publisher: PublisherDep, body: BankReplayRequest | None = None
) -> BankReplayResponse:
    since = body.from_ if body is not None else None
    async with publisher.pool.acquire() as conn, conn.transaction():
        if not await replay.bank_known(conn, bank_id):
            raise NotFound(f"bank {bank_id} not found")
        await replay.lock_bank_replay(conn, bank_id)
        await bank_locks.lock_bank_for_rewrite(conn, bank_id)
        journaled = await replay.messages_to_replay(conn, bank_id, since)
        events = [event for _, event in journaled]
        cleared = await replay.clear_derived(conn, bank_id, [e.message_id for e in events])
        await replay.reopen_messages(conn, [e.event_id for e in events])
    partitions: dict[int, int] = {}
    try:
        for start in range(0, len(events), _PUBLISH_BATCH):
            placed = await publisher.publish(events[start : start + _PUBLISH_BATCH])
            for partition, offset in placed.values():
                partitions[partition] = max(offset, partitions.get(partition, -1))
    except Exception as exc:  # the journal entries are reopened: the sweeper publishes them
        log.warning("replay publish of bank %s failed, left to the sweeper: %r", bank_id, exc)
    seq = max((s for s, _ in journaled), default=0)
    return BankReplayResponse(
        bank_id=bank_id,
        messages_replayed=len(events),
        facts_removed=cleared.facts,
        observations_removed=cleared.observations,
        entities_removed=cleared.entities,
        chunks_removed=cleared.chunks,
        consistency=ConsistencyToken(
            token=ConsistencyToken.encode(seq), journal_seq=seq, topic=MESSAGES.name, partitions=partitions
        ),
    )
