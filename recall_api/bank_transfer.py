"""Export a bank as a stream of JSON lines, and import one, for backups and moves.

Export reads one consistent snapshot through server-side cursors and yields a line at a time.
Import reads the body as it arrives and writes batches of one kind, each in its own
transaction: idempotent (every write is `ON CONFLICT DO NOTHING`) and resumable (a cut
import, run again, writes what is missing). Into the same bank id the rows keep their ids;
into another (`--as`), every id is mapped to a uuid5 of the new bank and the old id, so the
copy lives beside the original and importing it twice still changes nothing.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from typing import Any

import asyncpg
from pydantic import ValidationError

from tempr import __version__
from tempr.errors import InvalidRequest
from tempr.schemas.bank_export import (
    FORMAT_VERSION,
    BankRecord,
    ExportEnd,
    ExportHeader,
    ImportResult,
    parse_record,
    upgrade_record,
)
from tempr.schemas.ids import imported_id
from tempr.store import bank_export, bank_import
from tempr.store.embedding_column import embedding_dimension

__all__ = ["export_lines", "import_lines"]

_BATCH = 500
_MAX_LINE_BYTES = 16_000_000

# Fields holding ids of the bank's rows, by record kind: mapped when importing under a new id.
_ID_FIELDS: dict[str, tuple[str, ...]] = {
    "forgotten_fact": ("unit_id",),
    "message": ("id",),
    "chunk": ("id",),
    "entity": ("id",),
    "fact": ("id", "chunk_id"),
    "unit_entity": ("unit_id", "entity_id"),
    "link": ("from_id", "to_id"),
    "opinion_history": ("id", "opinion_id"),
    "correction": ("id", "unit_id"),
    "fact_history": ("id", "unit_id"),
}
_ID_LISTS: dict[str, tuple[str, ...]] = {"fact": ("evidence_ids",), "opinion_history": ("evidence_ids",)}


def _line(record: Any) -> bytes:
    return record.model_dump_json().encode() + b"\n"


async def export_lines(pool: asyncpg.Pool, bank_id: str, *, embedding_model: str) -> AsyncIterator[bytes]:
    """The header, the profile, every row, then the end record with the counts."""
    counts: dict[str, int] = {}
    async with pool.acquire() as conn, conn.transaction(isolation="repeatable_read", readonly=True):
        yield _line(
            ExportHeader(
                version=FORMAT_VERSION,
                bank_id=bank_id,
                exported_at=datetime.now(UTC),
                tempr_version=__version__,
                embedding_model=embedding_model,
                embedding_dimension=await embedding_dimension(conn),
            )
        )
        profile = await bank_export.bank_profile(conn, bank_id)
        if profile is not None:
            yield _line(BankRecord.model_validate(dict(profile)))
        async for kind, row in bank_export.export_rows(conn, bank_id):
            counts[kind] = counts.get(kind, 0) + 1
            yield _line(parse_record({"record": kind, **row}))
    yield _line(ExportEnd(counts=counts))


def _mapper(source: str, target: str) -> Callable[[Any], Any]:
    if source == target:
        return lambda value: value
    return lambda value: None if value is None else str(imported_id(target, value))


def _remap(kind: str, raw: dict[str, Any], target: str, new_id: Callable[[Any], Any]) -> dict[str, Any]:
    row = {k: v for k, v in raw.items() if k != "record"}
    for name in _ID_FIELDS.get(kind, ()):
        row[name] = new_id(row[name])
    for name in _ID_LISTS.get(kind, ()):
        row[name] = [new_id(v) for v in row[name]]
    if kind == "message":
        row["payload"] = {**row["payload"], "bank_id": target, "event_id": row["id"]}
    if kind == "fact" and "corrected_by" in row["metadata"]:
        row["metadata"] = {**row["metadata"], "corrected_by": new_id(row["metadata"]["corrected_by"])}
    if kind == "fact" and "merged_ids" in row["metadata"]:
        row["metadata"] = {
            **row["metadata"],
            "merged_ids": [new_id(i) for i in row["metadata"]["merged_ids"]],
        }
    return row


async def _lines(body: AsyncIterator[bytes]) -> AsyncIterator[tuple[int, bytes]]:
    pending, number = b"", 0
    async for piece in body:
        pending += piece
        if len(pending) > _MAX_LINE_BYTES and b"\n" not in pending:
            raise InvalidRequest(f"line {number + 1}: longer than {_MAX_LINE_BYTES} bytes")
        *complete, pending = pending.split(b"\n")
        for line in complete:
            number += 1
            if line.strip():
                yield number, line
    if pending.strip():
        yield number + 1, pending


def _decode(number: int, line: bytes, version: int) -> dict[str, Any]:
    try:
        raw = json.loads(line)
        if not isinstance(raw, dict):
            raise ValueError("a record is a JSON object")
        return parse_record(upgrade_record(version, raw)).model_dump(mode="json")
    except (ValueError, ValidationError) as exc:
        raise InvalidRequest(f"line {number}: {exc}") from None


def _check_header(header: ExportHeader, *, embedding_model: str, dimension: int | None) -> None:
    try:
        upgrade_record(header.version, {})
    except ValueError as exc:
        raise InvalidRequest(str(exc)) from None
    if header.embedding_dimension != dimension or header.embedding_model != embedding_model:
        raise InvalidRequest(
            f"the export's vectors were made by {header.embedding_model!r} "
            f"(dimension {header.embedding_dimension}); this server embeds with {embedding_model!r} "
            f"(dimension {dimension}): import it into a tempr with TEMPR_EMBEDDING_MODEL={header.embedding_model}, "
            "then change the model there (`tempr replay` re-embeds)"
        )


async def import_lines(
    pool: asyncpg.Pool, target: str, body: AsyncIterator[bytes], *, embedding_model: str
) -> ImportResult:
    lines = _lines(body)
    first = await anext(lines, None)
    if first is None:
        raise InvalidRequest("the import is empty: its first line must be the export header")
    try:
        header = ExportHeader.model_validate_json(first[1])
    except ValidationError as exc:
        raise InvalidRequest(f"line 1 is not a tempr export header: {exc}") from None
    _check_header(header, embedding_model=embedding_model, dimension=await embedding_dimension(pool))
    new_id = _mapper(header.bank_id, target)
    records: dict[str, int] = {}
    written: dict[str, int] = {}
    batch: list[dict[str, Any]] = []
    kind_of_batch = ""
    complete = False

    async def flush() -> None:
        if batch:
            async with pool.acquire() as conn, conn.transaction():
                count = await bank_import.write_batch(conn, target, kind_of_batch, batch)
            written[kind_of_batch] = written.get(kind_of_batch, 0) + count
            batch.clear()

    async for number, line in lines:
        raw = _decode(number, line, header.version)
        kind = raw.pop("record")
        records[kind] = records.get(kind, 0) + 1
        if kind == "end":
            complete = True
            continue
        if kind == "header":
            raise InvalidRequest(f"line {number}: a second header (one export per import)")
        if kind == "bank":
            profile = BankRecord.model_validate(raw).model_dump()
            if target != header.bank_id:  # the copy's extractor derives fact ids as the import mapped them
                profile["id_lineage"] = [*profile["id_lineage"], header.bank_id]
            async with pool.acquire() as conn:
                made = await bank_import.create_bank_if_missing(conn, target, profile)
            written["bank"] = int(made)
            continue
        if kind != kind_of_batch or len(batch) >= _BATCH:
            await flush()
            kind_of_batch = kind
        batch.append(_remap(kind, raw, target, new_id))
    await flush()
    return ImportResult(
        bank_id=target,
        source_bank_id=header.bank_id,
        format_version=header.version,
        records=records,
        written=written,
        complete=complete,
    )
