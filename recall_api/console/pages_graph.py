"""Entities (a list; one entity's facts on a timeline) and the graph around a fact or an entity."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, JSONResponse

from tempr.errors import NotFound
from tempr.recall_api.console.render import PAGE, render, render_bank_list
from tempr.recall_api.deps import BankIdPath, PoolDep
from tempr.store import entities
from tempr.store.neighbourhood import entity_fact_ids, neighbourhood
from tempr.store.recall import fetch_units

__all__ = ["router"]

router = APIRouter(prefix="/console/banks/{bank_id}", include_in_schema=False)

PER_TYPE = 6  # heaviest links of each type per expanded fact: a picture, never the bank
ENTITY_FACTS = 12


@router.get("/entities", response_class=HTMLResponse)
async def entities_page(
    request: Request, bank_id: BankIdPath, pool: PoolDep, offset: int = Query(0, ge=0, le=1_000_000)
) -> HTMLResponse:
    rows = await entities.list_entities(pool, bank_id, limit=PAGE, offset=offset)
    total = await entities.count_entities(pool, bank_id)
    return render_bank_list(request, "entities", bank_id, rows, total, offset)


@router.get("/entities/{entity_id}", response_class=HTMLResponse)
async def entity_page(request: Request, bank_id: BankIdPath, entity_id: UUID, pool: PoolDep) -> HTMLResponse:
    row = await entities.get_entity(pool, bank_id, entity_id)
    if row is None:
        raise NotFound(f"entity {entity_id} not found in bank {bank_id}")
    facts = await entities.entity_facts(pool, entity_id)
    return render(request, "entity.html", bank_id=bank_id, section="entities", entity=row, facts=facts)


@router.get("/graph", response_class=HTMLResponse)
async def graph_page(
    request: Request, bank_id: BankIdPath, pool: PoolDep, fact: UUID | None = None, entity: UUID | None = None
) -> HTMLResponse:
    top = await entities.list_entities(pool, bank_id, limit=15, offset=0)
    return render(
        request, "graph.html", bank_id=bank_id, section="graph", fact=fact, entity=entity, top_entities=top
    )


@router.get("/graph/data")
async def graph_data(
    bank_id: BankIdPath, pool: PoolDep, fact: UUID | None = None, entity: UUID | None = None
) -> JSONResponse:
    """Cytoscape elements: the centre, its links (a few of each type) and their other ends."""
    nodes: dict[str, dict[str, Any]] = {}
    edges: list[dict[str, Any]] = []
    centres: list[UUID] = []
    if entity is not None:
        row = await entities.get_entity(pool, bank_id, entity)
        if row is None:
            raise NotFound(f"entity {entity} not found in bank {bank_id}")
        key = f"e:{entity}"
        nodes[key] = {"id": key, "label": row["canonical_name"], "kind": "entity"}
        centres = await entity_fact_ids(pool, bank_id, entity, limit=ENTITY_FACTS)
        edges += [{"id": f"{key}>{c}", "source": key, "target": str(c), "type": "mentions"} for c in centres]
        # Only the links among the entity's own facts: the picture stays the entity's.
        among = set(centres)
        links = [
            lk
            for lk in await neighbourhood(pool, bank_id, centres, per_type=1)
            if lk["from_id"] in among and lk["to_id"] in among
        ]
    elif fact is not None:
        centres = [fact]
        links = list(await neighbourhood(pool, bank_id, centres, per_type=PER_TYPE))
    else:
        return JSONResponse({"nodes": [], "edges": []})
    ids = set(centres) | {lk["from_id"] for lk in links} | {lk["to_id"] for lk in links}
    async with pool.acquire() as conn:
        rows = await fetch_units(conn, bank_id, list(ids))
    if fact is not None and not rows:
        raise NotFound(f"fact {fact} not found in bank {bank_id}")
    for r in rows:
        nodes[str(r["id"])] = {"id": str(r["id"]), "label": r["text"], "kind": r["fact_type"]}
    edges += [
        {
            "id": f"{lk['from_id']}>{lk['to_id']}:{lk['link_type']}",
            "source": str(lk["from_id"]),
            "target": str(lk["to_id"]),
            "type": lk["link_type"],
            "weight": round(lk["weight"], 3),
        }
        for lk in links
        if str(lk["from_id"]) in nodes and str(lk["to_id"]) in nodes
    ]
    return JSONResponse({"nodes": list(nodes.values()), "edges": edges, "centres": [str(c) for c in centres]})
