"""The meta-path forward push graph arm through the recall endpoint, on a hand-built graph."""

from __future__ import annotations

import asyncpg
import httpx
import numpy as np
import pytest

from tests.recall.bankkit import Unit, embed, insert_entity, insert_link, insert_units, recall

pytestmark = pytest.mark.integration

QUERY = "Where does Alice work?"


async def _graph(db: asyncpg.Pool, bank: str) -> dict[str, Unit]:
    units = {
        "seed": Unit("Alice works at Google as a software engineer."),
        "entity": Unit("The quarterly offsite in Denver was cancelled."),  # shares Google
        "entity>semantic": Unit("The spring trip moved to April."),  # similar to the offsite
        "semantic": Unit("Alice writes the code for Google's search ranking."),
        "semantic>causes": Unit("The team celebrated with cake on Friday."),  # caused by it
    }
    await insert_units(db, bank, list(units.values()))
    await insert_entity(db, bank, "Google", [units["seed"].id, units["entity"].id])
    await insert_link(db, bank, units["entity"].id, units["entity>semantic"].id, "semantic", 0.8)
    await insert_link(db, bank, units["seed"].id, units["semantic"].id, "semantic", 0.9)
    await insert_link(db, bank, units["semantic"].id, units["semantic>causes"].id, "causes", 0.9)
    return units


def _far_from_query(*texts: str) -> bool:
    """Below the semantic arm's floor, so only a walk over the graph can find them."""
    vectors = embed([QUERY, *texts])
    vectors = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    return bool(np.all(vectors[1:] @ vectors[0] < 0.3))


def _graph_arm(body: dict) -> tuple[str, dict[str, dict]]:
    arm = body["trace"]["arms"]["graph"]
    return arm["note"], {c["id"]: c for c in arm["candidates"]}


async def test_mpfp_walks_typed_meta_paths_two_hops_out(
    db: asyncpg.Pool, api: httpx.Client, bank: str
) -> None:
    units = await _graph(db, bank)
    assert _far_from_query(units["entity>semantic"].text, units["semantic>causes"].text)
    note, found = _graph_arm(recall(api, bank, QUERY, trace=True, graph_retriever="mpfp"))
    assert note.startswith("mpfp")
    two_hops = found[str(units["entity>semantic"].id)]
    assert "semantic:entity>semantic" in two_hops["patterns"]
    assert "semantic:semantic>causes" in found[str(units["semantic>causes"].id)]["patterns"]
    assert str(units["seed"].id) in found  # seeds are ranked too, as in the reference
    # One hop of spreading activation does not reach them.
    note, found = _graph_arm(recall(api, bank, QUERY, trace=True, graph_retriever="bfs"))
    assert note.startswith("bfs")
    assert str(units["entity>semantic"].id) not in found
    assert str(units["semantic>causes"].id) not in found


async def test_mpfp_results_reach_the_answer_and_respect_filters(
    db: asyncpg.Pool, api: httpx.Client, bank: str
) -> None:
    units = await _graph(db, bank)
    body = recall(api, bank, QUERY, graph_retriever="mpfp")
    by_id = {r["id"]: r for r in body["results"]}
    # Packed for the answer, and the graph arm is among those that found it.
    assert "graph" in by_id[str(units["entity>semantic"].id)]["scores"]["arms"]
    _, found = _graph_arm(recall(api, bank, QUERY, trace=True, graph_retriever="mpfp", types=["experience"]))
    assert found == {}


async def test_the_bank_chooses_its_retriever_and_a_request_overrides_it(
    db: asyncpg.Pool, api: httpx.Client, bank: str
) -> None:
    await _graph(db, bank)
    # The default preset leaves the graph arm out until a retriever is chosen.
    assert "graph" not in recall(api, bank, QUERY, trace=True)["trace"]["arms"]
    r = api.put(f"/v1/banks/{bank}", json={"config": {"graph_retriever": "mpfp"}})
    assert r.status_code in (200, 201), r.text
    assert _graph_arm(recall(api, bank, QUERY, trace=True))[0].startswith("mpfp")
    assert _graph_arm(recall(api, bank, QUERY, trace=True, graph_retriever="bfs"))[0].startswith("bfs")
    assert "graph" not in recall(api, bank, QUERY, trace=True, preset="no-graph")["trace"]["arms"]
    bad = api.post(f"/v1/banks/{bank}/recall", json={"query": QUERY, "graph_retriever": "dfs"})
    assert bad.status_code == 422 and "graph_retriever" in bad.text
