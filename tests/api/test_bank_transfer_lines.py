"""Import's line reader and id mapping, without a server."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator

import pytest

from tempr.errors import InvalidRequest
from tempr.recall_api.bank_transfer import _lines, _mapper, _remap
from tempr.schemas.bank_export import FORMAT_VERSION, upgrade_record


async def _pieces(*parts: bytes) -> AsyncIterator[bytes]:
    for part in parts:
        yield part


def _read(*parts: bytes) -> list[tuple[int, bytes]]:
    async def go() -> list[tuple[int, bytes]]:
        return [item async for item in _lines(_pieces(*parts))]

    return asyncio.run(go())


def test_lines_are_joined_across_pieces_and_numbered() -> None:
    assert _read(b'{"a":', b' 1}\n\n{"b"', b": 2}\n", b'{"c": 3}') == [
        (1, b'{"a": 1}'),
        (3, b'{"b": 2}'),
        (4, b'{"c": 3}'),
    ]


def test_ids_keep_under_the_same_bank_and_map_under_another() -> None:
    same, other = _mapper("alice", "alice"), _mapper("alice", "copy")
    old = str(uuid.uuid4())
    assert same(old) == old
    assert other(old) == other(old) != old, "deterministic: importing twice writes the same rows"
    row = {
        "record": "fact",
        "id": old,
        "chunk_id": None,
        "evidence_ids": [old],
        "metadata": {"corrected_by": old},
    }
    mapped = _remap("fact", row, "copy", other)
    assert (
        mapped["id"] == other(old) and mapped["chunk_id"] is None and mapped["evidence_ids"] == [other(old)]
    )
    assert mapped["metadata"]["corrected_by"] == other(old) and "record" not in mapped
    message = _remap("message", {"id": old, "payload": {"bank_id": "alice", "event_id": old}}, "copy", other)
    assert message["payload"] == {"bank_id": "copy", "event_id": other(old)}


def test_a_newer_format_is_refused_with_a_message() -> None:
    assert upgrade_record(FORMAT_VERSION, {"x": 1}) == {"x": 1}
    with pytest.raises(ValueError, match="newer"):
        upgrade_record(FORMAT_VERSION + 1, {})


def test_an_overlong_line_is_refused() -> None:
    with pytest.raises(InvalidRequest, match="longer than"):
        _read(b"x" * 17_000_000)
