"""Records that failed somewhere in the pipeline, with their reasons; replaying one."""

from __future__ import annotations

from uuid import UUID

from fastapi import APIRouter, Query, Request

from tempr.errors import Conflict, InvalidRequest, NotFound
from tempr.recall_api.auth import PrincipalDep
from tempr.recall_api.deps import OffsetQuery, PoolDep, PublisherDep
from tempr.schemas.api import DeadLetterOut, ErrorBody
from tempr.schemas.operations import DeadLetterReplayed
from tempr.store.dead_letters import list_dead_letters, lock_dead_letter, mark_replayed
from tempr.streams.topics import DLQ

__all__ = ["router"]

router = APIRouter(prefix="/v1", tags=["dead letters"])


@router.get("/dead-letters", response_model=list[DeadLetterOut])
async def dead_letters(
    pool: PoolDep,
    principal: PrincipalDep,
    offset: OffsetQuery,
    limit: int = Query(100, ge=1, le=1000),
    replayed: bool | None = Query(None, description="Only letters replayed (true) or not yet (false)."),
) -> list[DeadLetterOut]:
    rows = await list_dead_letters(
        pool, limit=limit, offset=offset, replayed=replayed, visible=principal.visible_patterns()
    )
    return [DeadLetterOut.model_validate(r) for r in rows]


@router.post(
    "/dead-letters/{letter_id}/replay",
    response_model=DeadLetterReplayed,
    responses={
        400: {"model": ErrorBody, "description": "A letter from the dead-letter topic itself"},
        404: {"model": ErrorBody, "description": "No such dead letter"},
        409: {"model": ErrorBody, "description": "Already replayed (pass force=true to replay it again)"},
    },
    summary="Publish a failed record again, unchanged, to its original topic with its key",
)
async def replay_dead_letter(
    letter_id: UUID,
    publisher: PublisherDep,
    principal: PrincipalDep,
    request: Request,
    force: bool = Query(False, description="Replay even if it was replayed before."),
) -> DeadLetterReplayed:
    # The row stays locked until the broker acknowledged, so a concurrent replay waits and
    # then sees replayed_at; a failed publish rolls back and leaves the letter as it was.
    async with publisher.pool.acquire() as conn, conn.transaction():
        letter = await lock_dead_letter(conn, letter_id)
        if letter is not None and not principal.all_banks:
            # Another bank's letter is "not found" for this key, as if it did not exist.
            key = letter["key"]
            if key is None or not principal.sees(key.split("/", 1)[0]):
                letter = None
        if letter is None:
            raise NotFound(f"dead letter {letter_id} not found")
        if letter["key"] is not None:  # the audit row names the letter's bank
            request.state.audit["bank"] = letter["key"].split("/", 1)[0]
        if letter["topic"] == DLQ.name:
            raise InvalidRequest("this record failed on the dead-letter topic itself; it is not replayable")
        if letter["replayed_at"] is not None and not force:
            raise Conflict(
                f"dead letter {letter_id} was already replayed at {letter['replayed_at'].isoformat()}; "
                "pass force=true to replay it again"
            )
        key = letter["key"]
        meta = await (
            await publisher.producer.send(
                letter["topic"],
                value=letter["payload"].encode(),
                key=None if key is None else key.encode(),
            )
        )
        replayed_at = await mark_replayed(conn, letter_id)
    return DeadLetterReplayed(
        id=letter_id,
        topic=meta.topic,
        partition=meta.partition,
        offset=meta.offset,
        replayed_at=replayed_at,
        previously_replayed_at=letter["replayed_at"],
    )
