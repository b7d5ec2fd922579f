"""Banks: profiles, created on first retain, deleted with a tombstone."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

import asyncpg

from tempr.schemas.banks import Bank, BankConfig, Disposition
from tempr.store.keys import bank_visible

__all__ = [
    "count_banks",
    "delete_bank",
    "deleted_among",
    "ensure_banks",
    "get_bank",
    "id_lineages",
    "list_banks",
    "put_bank",
    "record_tombstone",
    "to_bank",
    "update_bank",
    "used_since",
]

_BANK_COLUMNS = "id, coalesce(name, id) AS name, background, disposition, config, created_at, updated_at"

# Every table holding a bank's rows, children first (links and unit_entities cascade anyway).
_BANK_TABLES = (
    "fact_history",
    "fact_corrections",
    "forgotten_facts",
    "forgotten_messages",
    "opinion_history",
    "memory_links",
    "unit_entities",
    "memory_units",
    "bank_fact_counts",
    "bank_link_counts",
    "bank_lexemes",
    "bank_keyword_stats",
    "entities",
    "chunks",
    "documents",
    "watermarks",
    "messages",
)


def to_bank(row: asyncpg.Record) -> Bank:
    # Stored JSON may predate a field (or carry one dropped since): defaults fill, extras go.
    disposition: dict[str, Any] = {
        k: v for k, v in row["disposition"].items() if k in Disposition.model_fields
    }
    config: dict[str, Any] = {k: v for k, v in row["config"].items() if k in BankConfig.model_fields}
    return Bank(
        bank_id=row["id"],
        name=row["name"],
        background=row["background"],
        disposition=Disposition.model_validate(disposition),
        config=BankConfig.model_validate(config),
        created_at=row["created_at"],
        updated_at=row["updated_at"],
    )


async def ensure_banks(conn: asyncpg.Connection, bank_ids: Iterable[str]) -> None:
    await conn.executemany(
        "INSERT INTO banks (id, name) VALUES ($1, $1) ON CONFLICT (id) DO NOTHING",
        [(b,) for b in sorted(set(bank_ids))],
    )


async def deleted_among(conn: asyncpg.Connection | asyncpg.Pool, bank_ids: Iterable[str]) -> set[str]:
    rows = await conn.fetch("SELECT id FROM deleted_banks WHERE id = ANY($1::text[])", sorted(set(bank_ids)))
    return {r["id"] for r in rows}


async def get_bank(conn: asyncpg.Connection | asyncpg.Pool, bank_id: str) -> asyncpg.Record | None:
    return await conn.fetchrow(f"SELECT {_BANK_COLUMNS} FROM banks WHERE id = $1", bank_id)


async def list_banks(
    pool: asyncpg.Pool, *, limit: int, offset: int, visible: Sequence[str] | None = None
) -> list[asyncpg.Record]:
    """`visible`: bank patterns of the caller's key (None: every bank)."""
    return await pool.fetch(
        f"SELECT {_BANK_COLUMNS} FROM banks WHERE {bank_visible('id', 3)} ORDER BY id LIMIT $1 OFFSET $2",
        limit,
        offset,
        None if visible is None else list(visible),
    )


async def count_banks(pool: asyncpg.Pool, visible: Sequence[str] | None = None) -> int:
    return await pool.fetchval(
        f"SELECT count(*) FROM banks WHERE {bank_visible('id', 1)}",
        None if visible is None else list(visible),
    )


async def put_bank(
    conn: asyncpg.Connection,
    bank_id: str,
    *,
    name: str | None,
    background: str,
    disposition: dict[str, Any],
    config: dict[str, Any],
) -> tuple[asyncpg.Record, bool]:
    """Create or replace the profile; returns the row and whether it was created."""
    row = await conn.fetchrow(
        f"""
        INSERT INTO banks (id, name, background, disposition, config)
        VALUES ($1, coalesce($2, $1), $3, $4, $5)
        ON CONFLICT (id) DO UPDATE SET
            name = coalesce($2, $1), background = $3, disposition = $4, config = $5, updated_at = now()
        RETURNING {_BANK_COLUMNS}, (xmax = 0) AS created
        """,
        bank_id,
        name,
        background,
        disposition,
        config,
    )
    assert row is not None
    return row, bool(row["created"])


async def update_bank(
    conn: asyncpg.Connection,
    bank_id: str,
    *,
    name: str | None = None,
    background: str | None = None,
    disposition: dict[str, Any] | None = None,
    config: dict[str, Any] | None = None,
) -> asyncpg.Record | None:
    """Set what is given; `disposition` and `config` are merged key by key into the stored ones."""
    return await conn.fetchrow(
        f"""
        UPDATE banks SET
            name = coalesce($2, name),
            background = coalesce($3, background),
            disposition = disposition || coalesce($4::jsonb, '{{}}'::jsonb),
            config = config || coalesce($5::jsonb, '{{}}'::jsonb),
            updated_at = now()
        WHERE id = $1
        RETURNING {_BANK_COLUMNS}
        """,
        bank_id,
        name,
        background,
        disposition,
        config,
    )


async def delete_bank(
    conn: asyncpg.Connection, bank_id: str, *, deleted_at: datetime | None = None
) -> dict[str, int]:
    """Remove every row of the bank and leave a tombstone; returns rows removed per table."""
    removed: dict[str, int] = {}
    for table in _BANK_TABLES:
        # Table names come from the fixed tuple above, never from input.
        status = await conn.execute(f"DELETE FROM {table} WHERE bank_id = $1", bank_id)
        removed[table] = int(status.split()[-1])
    status = await conn.execute("DELETE FROM banks WHERE id = $1", bank_id)
    removed["banks"] = int(status.split()[-1])
    await record_tombstone(conn, bank_id, deleted_at)
    return removed


async def record_tombstone(conn: asyncpg.Connection, bank_id: str, deleted_at: datetime | None) -> None:
    await conn.execute(
        """
        INSERT INTO deleted_banks (id, deleted_at) VALUES ($1, coalesce($2, now()))
        ON CONFLICT (id) DO UPDATE SET deleted_at = greatest(deleted_banks.deleted_at, EXCLUDED.deleted_at)
        """,
        bank_id,
        deleted_at,
    )


async def used_since(conn: asyncpg.Connection, bank_id: str, moment: datetime) -> bool:
    """Whether the bank received messages after `moment` (it was created again)."""
    return await conn.fetchval(
        "SELECT EXISTS (SELECT 1 FROM messages WHERE bank_id = $1 AND received_at > $2)", bank_id, moment
    )


async def id_lineages(
    conn: asyncpg.Connection | asyncpg.Pool, bank_ids: Iterable[str]
) -> dict[str, list[str]]:
    """The banks with an import lineage among these (see migration 0008), each oldest first."""
    rows = await conn.fetch(
        "SELECT id, id_lineage FROM banks WHERE id = ANY($1::text[]) AND id_lineage <> '{}'",
        sorted(set(bank_ids)),
    )
    return {r["id"]: list(r["id_lineage"]) for r in rows}
