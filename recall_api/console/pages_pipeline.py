"""The pipeline: what waits, what flowed in the last minutes, each stage's counters, and the
dead letters with replay (one, or all)."""

from __future__ import annotations

from uuid import UUID

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse

from tempr.errors import TemprError
from tempr.recall_api.auth import PrincipalDep
from tempr.recall_api.console.render import flash, render
from tempr.recall_api.console.session import check_csrf
from tempr.recall_api.deps import PoolDep, PublisherDep, SettingsDep
from tempr.recall_api.health_check import assess_health
from tempr.recall_api.routes import dead_letters as letter_routes
from tempr.store.dead_letters import list_dead_letters
from tempr.store.throughput import pending_by_bank, per_minute
from tempr.streams.topics import DLQ

__all__ = ["router"]

router = APIRouter(prefix="/console", include_in_schema=False)

MINUTES = 15
LETTERS = 100


@router.get("/pipeline", response_class=HTMLResponse)
async def pipeline(
    request: Request,
    pool: PoolDep,
    settings: SettingsDep,
    publisher: PublisherDep,
    principal: PrincipalDep,
    replayed: bool = False,
) -> HTMLResponse:
    visible = principal.visible_patterns()
    health = await assess_health(
        settings, pool, publisher.producer, getattr(request.app.state, "group_lag", None)
    )
    minutes = await per_minute(pool, minutes=MINUTES, visible=visible)
    peak = max((max(a, m) for _, a, m in minutes), default=0) or 1
    letters = await list_dead_letters(pool, limit=LETTERS, replayed=replayed, visible=visible)
    return render(
        request,
        "pipeline.html",
        health=health if principal.all_banks else None,  # stage counters span every bank
        pending=await pending_by_bank(pool, visible=visible),
        minutes=minutes,
        peak=peak,
        letters=letters,
        replayed=replayed,
        dlq_topic=DLQ.name,
    )


@router.post(
    "/dead-letters/{letter_id}/replay", dependencies=[Depends(check_csrf)], response_class=HTMLResponse
)
async def replay_one(
    request: Request, letter_id: UUID, publisher: PublisherDep, principal: PrincipalDep
) -> HTMLResponse:
    try:
        out = await letter_routes.replay_dead_letter(letter_id, publisher, principal, request, force=False)
    except TemprError as exc:
        return flash(request, 409 if "already" in str(exc) else 400, str(exc))
    return flash(
        request, 200, f"Replayed: sent again to {out.topic} (partition {out.partition}, offset {out.offset})."
    )


@router.post("/dead-letters/replay-all", dependencies=[Depends(check_csrf)], response_class=HTMLResponse)
async def replay_all(
    request: Request, pool: PoolDep, publisher: PublisherDep, principal: PrincipalDep
) -> HTMLResponse:
    letters = await list_dead_letters(pool, limit=1000, replayed=False, visible=principal.visible_patterns())
    sent, refused = 0, []
    for letter in letters:
        if letter["topic"] == DLQ.name:
            continue
        try:
            await letter_routes.replay_dead_letter(letter["id"], publisher, principal, request, force=False)
            sent += 1
        except TemprError as exc:
            refused.append(str(exc))
    message = f"Replayed {sent} dead letter{'' if sent == 1 else 's'}."
    if refused:
        message += f" {len(refused)} not replayed: {refused[0]}"
    return flash(request, 200 if not refused else 409, message)
