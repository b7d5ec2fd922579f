"""Embeddings sent as pgvector's binary form reach Postgres bit for bit, as the text form did."""

from __future__ import annotations

import asyncpg
import numpy as np
import pytest

from tempr.store.vector_params import vector_params

pytestmark = pytest.mark.integration


async def test_vectors_sent_as_binary_are_the_float32_the_text_form_named(db: asyncpg.Pool) -> None:
    rng = np.random.default_rng(3)
    vectors = [rng.normal(size=384).astype(np.float32) for _ in range(5)]
    as_lists = [v.tolist() for v in vectors]  # events carry lists of floats
    text = ["[" + ",".join(map(repr, v.tolist())) + "]" for v in vectors]
    rows = await db.fetch(
        """SELECT b.i, b.v = t.v::vector AS same, b.v <=> $3::vector AS d
           FROM unnest($1::vector[]) WITH ORDINALITY AS b(v, i)
           JOIN unnest($2::text[]) WITH ORDINALITY AS t(v, i) ON t.i = b.i ORDER BY b.i""",
        vector_params(as_lists),
        text,
        vector_params([vectors[0]])[0],
    )
    assert [r["same"] for r in rows] == [True] * 5
    assert rows[0]["d"] == 0.0 and all(r["d"] > 0.5 for r in rows[1:])
    back = await db.fetchval("SELECT $1::vector[]", vector_params(vectors))
    assert all(np.array_equal(np.asarray(b.to_numpy()), v) for b, v in zip(back, vectors, strict=True))
