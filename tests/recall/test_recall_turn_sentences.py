"""Packing keeps the rank order of the facts that cite a turn: an exchange does not take the
place of the fact of its turn. End to end against the embedded stack."""

from __future__ import annotations

import asyncpg
import httpx
import pytest

from tests.recall.bankkit import Unit, insert_units, recall

pytestmark = pytest.mark.integration

QUERY_TS = "2024-07-15T12:00:00Z"


async def test_an_exchange_does_not_take_the_place_of_the_turn_it_quotes(
    db: asyncpg.Pool, api: httpx.Client, bank: str
) -> None:
    turn = Unit("Caroline went to an LGBTQ support group yesterday and it was so powerful.", sources=["D1:3"])
    exchange = Unit(
        "Melanie asked Caroline what was new. Caroline went to an LGBTQ support group yesterday and it was so powerful.",
        sources=["D1:2", "D1:3"],
    )
    filler = [Unit(f"Melanie's note number {i} about groceries.") for i in range(4)]
    await insert_units(db, bank, [turn, exchange, *filler])
    body = recall(api, bank, "What did Caroline go to yesterday? A support group?", query_timestamp=QUERY_TS)
    results = body["results"]

    assert results[0]["id"] == str(turn.id)
    assert results[0]["source_message_ids"] == ["D1:3"]  # the top cites the turn that answers, alone
    shown = {r["id"]: r["text"] for r in results}
    assert shown[str(exchange.id)] == "Melanie asked Caroline what was new."  # its sentence, once
