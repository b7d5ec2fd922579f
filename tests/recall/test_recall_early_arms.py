"""A big bank's keyword arm runs while the question is embedded, and the recall comes out the same."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import UTC, datetime

import asyncpg
import numpy as np
import pytest

from tempr.inference.embeddings import Embedder, get_embedder
from tempr.recall_api.recall.pipeline import run_recall
from tempr.schemas.recall import RecallRequest
from tempr.settings import PACKAGED_EMBEDDING_MODEL
from tempr.store.keyword_stats import refresh_bank
from tests.recall.bankkit import Unit, insert_units

pytestmark = pytest.mark.integration

FACTS = [
    "Melanie painted a sunrise over the lake last week.",
    "Caroline went to an LGBTQ support group on Tuesday.",
    "Melanie signed up for a pottery class in July.",
    "Caroline is researching adoption agencies.",
    "The weather in Lisbon was sunny all week.",
]


class ArmsInFlight:
    """The real embedder, noting how many recall arms were running when it was asked."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.model_name = inner.model_name
        self.dimension = inner.dimension
        self.seen: list[int] = []

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        return self.inner.encode(texts)

    async def aencode(self, texts: Sequence[str]) -> np.ndarray:
        return await self.inner.aencode(texts)

    async def aencode_queries(self, texts: Sequence[str]) -> np.ndarray:
        running = [
            t
            for t in asyncio.all_tasks()
            if t.get_coro().__qualname__ == "run_arm" and not t.done()  # type: ignore[union-attr]
        ]
        self.seen.append(len(running))
        return await self.inner.aencode_queries(texts)


async def test_the_keyword_arm_overlaps_the_embedding_and_changes_nothing(
    db: asyncpg.Pool, bank: str
) -> None:
    await insert_units(db, bank, [Unit(t) for t in FACTS])
    embedder = ArmsInFlight(get_embedder(PACKAGED_EMBEDDING_MODEL))
    req = RecallRequest(
        query="What did Melanie paint?", trace=True, query_timestamp=datetime(2024, 1, 1, tzinfo=UTC)
    )
    small = await run_recall(db, embedder, None, bank, req, max_consistency_wait_s=0)
    async with db.acquire() as conn:  # what the maintenance step gives a big bank
        await refresh_bank(conn, bank)
    early = await run_recall(db, embedder, None, bank, req, max_consistency_wait_s=0)
    late = await run_recall(db, embedder, None, bank, req, max_consistency_wait_s=0, early_arms=False)
    # The keyword arm was in flight during the embedding only in a bank with keyword statistics
    # and early arms on.
    assert embedder.seen == [0, 1, 0]
    assert [r.id for r in small.results] == [r.id for r in late.results]
    assert [r.id for r in early.results] == [r.id for r in late.results]
    assert early.results[0].text == FACTS[0]
    assert early.trace["arms"]["keyword"]["count"] > 0
    assert early.trace and late.trace
    assert list(early.trace["arms"]) == list(late.trace["arms"])  # the configured order either way
    for arm in early.trace["arms"]:
        assert early.trace["arms"][arm]["candidates"] == late.trace["arms"][arm]["candidates"], arm
