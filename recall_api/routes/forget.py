"""Forget a fact, a message or a conversation: removed, tombstoned, and what they shared rebuilt.

Each forget is one transaction under the bank's rewrite lock (so the materializer's batches
wait), then the messages that shared a fact or a chunk with the forgotten ones are published
again to be rebuilt without them; should that publish fail, they are reopened in the journal
and the sweeper publishes them.
"""

from __future__ import annotations

import logging
from typing import Annotated, Any
from uuid import UUID

from fastapi import APIRouter, Path

from tempr.errors import NotFound
from tempr.recall_api.deps import BankIdPath, PublisherDep
from tempr.schemas.api import ConsistencyToken, ErrorBody
from tempr.schemas.lifecycle import ForgetResponse
from tempr.schemas.limits import SafeText
from tempr.store import bank_locks, forget, messages
from tempr.store.forget import Forgotten
from tempr.streams.publisher import Publisher
from tempr.streams.topics import MESSAGES

__all__ = ["forget_and_rebuild", "router"]

log = logging.getLogger(__name__)

router = APIRouter(prefix="/v1/banks/{bank_id}", tags=["lifecycle"])

MessageIdPath = Annotated[SafeText, Path(min_length=1, max_length=256)]

_NOT_FOUND: dict[int | str, dict[str, Any]] = {
    404: {"model": ErrorBody, "description": "Nothing by that id in this bank"}
}


@router.delete(
    "/memories/{memory_id}",
    response_model=ForgetResponse,
    responses=_NOT_FOUND,
    summary="Forget one fact: its links and mentions go, observations resting on it go, opinions drop it",
)
async def forget_memory(bank_id: BankIdPath, memory_id: UUID, publisher: PublisherDep) -> ForgetResponse:
    async with publisher.pool.acquire() as conn, conn.transaction():
        await bank_locks.lock_bank_for_rewrite(conn, bank_id)
        done = await forget.forget_fact(conn, bank_id, memory_id)
        if done is None:
            raise NotFound(f"memory {memory_id} not found in bank {bank_id}")
        head = await messages.max_seq(conn, bank_id)
    return _response(bank_id, done, head, [])


@router.delete(
    "/messages/{message_id}",
    response_model=ForgetResponse,
    responses=_NOT_FOUND,
    summary="Forget a message: removed from the journal with every fact made from it, and tombstoned",
)
async def forget_message(
    bank_id: BankIdPath, message_id: MessageIdPath, publisher: PublisherDep
) -> ForgetResponse:
    return await forget_and_rebuild(publisher, bank_id, [message_id], conversation_id=None)


@router.delete(
    "/conversations/{conversation_id}",
    response_model=ForgetResponse,
    responses=_NOT_FOUND,
    summary="Forget every message of a conversation, as forgetting each message does",
)
async def forget_conversation(
    bank_id: BankIdPath, conversation_id: MessageIdPath, publisher: PublisherDep
) -> ForgetResponse:
    return await forget_and_rebuild(publisher, bank_id, None, conversation_id=conversation_id)


async def forget_and_rebuild(
    publisher: Publisher,
    bank_id: str,
    message_ids: list[str] | None,
    *,
    conversation_id: str | None,
    reason: str = "forgotten",
) -> ForgetResponse:
    async with publisher.pool.acquire() as conn, conn.transaction():
        await bank_locks.lock_bank_for_rewrite(conn, bank_id)
        if message_ids is None:
            assert conversation_id is not None
            message_ids = await forget.conversation_message_ids(conn, bank_id, conversation_id)
            if not message_ids:
                raise NotFound(f"conversation {conversation_id!r} not found in bank {bank_id}")
        elif not await forget.known_messages(conn, bank_id, message_ids):
            raise NotFound(f"message {message_ids[0]!r} not found in bank {bank_id}")
        done = await forget.forget_messages(
            conn, bank_id, message_ids, conversation_id=conversation_id, reason=reason
        )
        head = await messages.max_seq(conn, bank_id)
    events = [event for _, event in done.rebuild]
    if events:
        try:
            await publisher.publish(events)
        except Exception as exc:  # reopened in the journal: the sweeper publishes them
            log.warning("rebuild publish after a forget in bank %s failed: %r", bank_id, exc)
    return _response(bank_id, done, head, message_ids)


def _response(bank_id: str, done: Forgotten, head: int, forgotten: list[str]) -> ForgetResponse:
    return ForgetResponse(
        bank_id=bank_id,
        facts_removed=done.facts,
        observations_removed=done.observations,
        opinions_updated=done.opinions_updated,
        entities_removed=done.entities,
        chunks_removed=done.chunks,
        messages_removed=done.messages,
        messages_forgotten=sorted(forgotten),
        messages_rebuilt=len(done.rebuild),
        consistency=ConsistencyToken(
            token=ConsistencyToken.encode(head), journal_seq=head, topic=MESSAGES.name, partitions={}
        ),
    )
