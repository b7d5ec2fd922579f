"""Hand-built banks for recall tests: units (with real embeddings), entities and links via SQL."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import asyncpg
import httpx

from tempr.inference.embeddings import get_embedder
from tempr.settings import PACKAGED_EMBEDDING_MODEL

__all__ = ["Unit", "embed", "insert_entity", "insert_link", "insert_units", "recall"]


@dataclass
class Unit:
    text: str
    fact_type: str = "world"
    occurred_start: datetime | None = None
    occurred_end: datetime | None = None
    mentioned_at: datetime | None = None
    tags: Sequence[str] = ()
    proof_count: int = 1
    chunk_id: uuid.UUID | None = None
    sources: Sequence[str] = ()  # the turns it cites; default: a message of its own
    id: uuid.UUID = field(default_factory=uuid.uuid4)


def embed(texts: Sequence[str]) -> Any:
    return get_embedder(PACKAGED_EMBEDDING_MODEL).encode(list(texts))


async def insert_units(db: asyncpg.Pool, bank: str, units: Sequence[Unit]) -> list[uuid.UUID]:
    vectors = embed([u.text for u in units])
    await db.executemany(
        """
        INSERT INTO memory_units (id, bank_id, text, embedding, fact_type, occurred_start,
            occurred_end, mentioned_at, tags, evidence_ids, chunk_id, source_message_ids)
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
        """,
        [
            (
                u.id,
                bank,
                u.text,
                v,
                u.fact_type,
                u.occurred_start,
                u.occurred_end,
                u.mentioned_at,
                list(u.tags),
                # proof_count is derived from the evidence: give it that many facts to rest on.
                [uuid.uuid4() for _ in range(u.proof_count if u.proof_count > 1 else 0)],
                u.chunk_id,
                list(u.sources) or [f"m-{u.id.hex[:8]}"],
            )
            for u, v in zip(units, vectors, strict=True)
        ],
    )
    return [u.id for u in units]


async def insert_entity(db: asyncpg.Pool, bank: str, name: str, unit_ids: Sequence[uuid.UUID]) -> uuid.UUID:
    entity_id = uuid.uuid4()
    await db.execute(
        "INSERT INTO entities (id, bank_id, canonical_name, mention_count) VALUES ($1, $2, $3, $4)",
        entity_id,
        bank,
        name,
        len(unit_ids),
    )
    await db.executemany(
        "INSERT INTO unit_entities (unit_id, entity_id, bank_id) VALUES ($1, $2, $3)",
        [(u, entity_id, bank) for u in unit_ids],
    )
    return entity_id


async def insert_link(
    db: asyncpg.Pool, bank: str, a: uuid.UUID, b: uuid.UUID, link_type: str, weight: float
) -> None:
    if link_type in ("temporal", "semantic", "entity") and b.int < a.int:
        a, b = b, a  # non-causal links are stored once per pair, from_id < to_id
    await db.execute(
        "INSERT INTO memory_links (from_id, to_id, link_type, weight, bank_id) VALUES ($1, $2, $3, $4, $5)",
        a,
        b,
        link_type,
        weight,
        bank,
    )


def recall(api: httpx.Client, bank: str, query: str, **body: Any) -> dict[str, Any]:
    r = api.post(f"/v1/banks/{bank}/recall", json={"query": query, **body})
    assert r.status_code == 200, r.text
    return r.json()
