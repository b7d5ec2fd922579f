"""POST /v1/banks/{bank_id}/recall end to end against the embedded stack."""

from __future__ import annotations

from datetime import UTC, datetime

import asyncpg
import httpx
import pytest

from tempr.inference.tokens import count_tokens
from tempr.recall_api.recall.config import RecallConfig
from tempr.recall_api.recall.scoring import boost
from tests.recall.bankkit import Unit, insert_entity, insert_units, recall

pytestmark = pytest.mark.integration

QUERY_TS = "2024-07-15T12:00:00Z"


def day(y: int, m: int, d: int) -> datetime:
    return datetime(y, m, d, 12, tzinfo=UTC)


def ids(body: dict) -> list[str]:
    return [r["id"] for r in body["results"]]


async def test_fused_ranking_boosts_and_result_shape(db: asyncpg.Pool, api: httpx.Client, bank: str) -> None:
    both = Unit("Zorblatt teaches sailing lessons at the marina.", mentioned_at=day(2024, 7, 1), tags=["t"])
    semantic_only = Unit("She gives boating classes by the harbour.", mentioned_at=day(2024, 7, 1))
    filler = [Unit(f"Unrelated note number {i} about groceries.") for i in range(5)]
    await insert_units(db, bank, [both, semantic_only, *filler])
    body = recall(api, bank, "Who teaches sailing lessons? Zorblatt?", query_timestamp=QUERY_TS, trace=True)

    assert ids(body)[0] == str(both.id)
    top = body["results"][0]
    assert set(top["scores"]["arms"]) >= {"semantic", "keyword"}
    assert top["scores"]["rrf"] == pytest.approx(sum(1 / (60 + r) for r in top["scores"]["arms"].values()))
    assert top["tags"] == ["t"] and top["source_message_ids"] and top["fact_type"] == "world"
    assert "entities" not in top and "chunk" not in top
    # MMR may move near-identical facts (the fillers) down; without diversity the final
    # scores are the order.
    plain = recall(
        api, bank, "Who teaches sailing lessons? Zorblatt?", query_timestamp=QUERY_TS, preset="no-diversity"
    )
    finals = [r["scores"]["final"] for r in plain["results"]]
    assert finals == sorted(finals, reverse=True)
    # The question does not ask about now: recency only breaks ties.
    recency_alpha = body["trace"]["recency_alpha"]
    assert recency_alpha == RecallConfig().recency_alpha_unasked
    for b in body["trace"]["boosts"]:
        expected = (
            b["rerank"]
            * boost(b["recency"], recency_alpha)
            * boost(b["temporal"], 0.2)
            * boost(b["proof"], 0.1)
        )
        assert b["final"] == pytest.approx(expected, abs=5e-5)  # each factor is rounded to 6 places
    assert body["budget"] == {"name": "mid", "limit": 300}
    assert body["temporal_window"] is None
    assert body["tokens_used"] == sum(count_tokens(r["text"]) for r in body["results"])


async def test_recency_breaks_a_tie_between_identical_facts(
    db: asyncpg.Pool, api: httpx.Client, bank: str
) -> None:
    old = Unit("Priya presented the quarterly roadmap.", occurred_start=day(2022, 1, 10))
    new = Unit("Priya presented the quarterly roadmap.", occurred_start=day(2024, 7, 10))
    await insert_units(db, bank, [old, new])
    # Identical texts tie in every arm; recency is the signal that tells them apart.
    body = recall(api, bank, "Priya roadmap", query_timestamp=QUERY_TS, trace=True)
    boosts = {b["id"]: b for b in body["trace"]["boosts"]}
    assert boosts[str(new.id)]["recency"] > boosts[str(old.id)]["recency"] == pytest.approx(0.1)


async def test_temporal_query_reports_window_and_proximity(
    db: asyncpg.Pool, api: httpx.Client, bank: str
) -> None:
    center = Unit("I planted tomatoes in the garden.", occurred_start=day(2024, 4, 15))
    edge = Unit("I planted roses in the garden.", occurred_start=day(2024, 3, 2))
    await insert_units(db, bank, [center, edge])
    body = recall(api, bank, "What did I plant last spring?", query_timestamp=QUERY_TS, trace=True)
    assert body["temporal_window"]["start"].startswith("2024-03-01")
    assert body["temporal_window"]["end"].startswith("2024-05-31")
    boosts = {b["id"]: b for b in body["trace"]["boosts"]}
    assert boosts[str(center.id)]["temporal"] > 0.9 > 0.1 > boosts[str(edge.id)]["temporal"]
    assert set(body["trace"]["arms"]["temporal"]["candidates"][0]) >= {"id", "rank", "score", "bucket"}


async def test_tiny_max_tokens_returns_exactly_the_top_result(
    db: asyncpg.Pool, api: httpx.Client, bank: str
) -> None:
    await insert_units(db, bank, [Unit(f"Kestrel sighting number {i} over the moor.") for i in range(6)])
    full = recall(api, bank, "kestrel sighting")
    assert len(full["results"]) == 6
    tiny = recall(api, bank, "kestrel sighting", max_tokens=1)
    assert ids(tiny) == ids(full)[:1]
    assert tiny["tokens_used"] == count_tokens(tiny["results"][0]["text"])
    two = count_tokens(full["results"][0]["text"]) + count_tokens(full["results"][1]["text"])
    assert len(recall(api, bank, "kestrel sighting", max_tokens=two)["results"]) == 2


@pytest.mark.parametrize(
    ("mode", "tags", "expected"),
    [
        ("any", ["a"], {"untagged", "a", "ab"}),
        ("all", ["a", "b"], {"untagged", "ab"}),
        ("any_strict", ["a"], {"a", "ab"}),
        ("all_strict", ["a", "b"], {"ab"}),
        ("exact", ["a"], {"a"}),
        ("exact", ["b", "a"], {"ab"}),
    ],
)
async def test_tag_matching_modes(
    db: asyncpg.Pool, api: httpx.Client, bank: str, mode: str, tags: list[str], expected: set[str]
) -> None:
    units = {
        "untagged": Unit("Pineapple note without tags."),
        "a": Unit("Pineapple note tagged a.", tags=["a"]),
        "b": Unit("Pineapple note tagged b.", tags=["b"]),
        "ab": Unit("Pineapple note tagged a and b.", tags=["a", "b"]),
    }
    await insert_units(db, bank, list(units.values()))
    by_id = {str(u.id): name for name, u in units.items()}
    assert {by_id[i] for i in ids(recall(api, bank, "pineapple note"))} == set(units)
    body = recall(api, bank, "pineapple note", tags=tags, tags_match=mode)
    assert {by_id[i] for i in ids(body)} == expected


async def test_types_and_time_window_filters(db: asyncpg.Pool, api: httpx.Client, bank: str) -> None:
    world = Unit("Quokkas live on Rottnest Island.", occurred_start=day(2023, 2, 1))
    experience = Unit(
        "I saw quokkas on Rottnest Island.", fact_type="experience", occurred_start=day(2024, 2, 1)
    )
    await insert_units(db, bank, [world, experience])
    assert ids(recall(api, bank, "quokkas Rottnest", types=["experience"])) == [str(experience.id)]
    assert set(ids(recall(api, bank, "quokkas Rottnest", types=["world", "experience"]))) == {
        str(world.id),
        str(experience.id),
    }
    window = {"start": "2023-01-01T00:00:00Z", "end": "2023-12-31T23:59:59Z"}
    assert ids(recall(api, bank, "quokkas Rottnest", time_window=window)) == [str(world.id)]


async def test_bank_isolation(db: asyncpg.Pool, api: httpx.Client, bank: str) -> None:
    other = bank + "-other"
    mine, theirs = Unit("The vault code is kept by Ignatius."), Unit("The vault code is kept by Ignatius.")
    await insert_units(db, bank, [mine])
    await insert_units(db, other, [theirs])
    for preset in ("default", "keyword-only", "semantic-only"):
        assert ids(recall(api, bank, "vault code Ignatius", preset=preset)) == [str(mine.id)]
        assert ids(recall(api, other, "vault code Ignatius", preset=preset)) == [str(theirs.id)]


async def test_keyword_only_preset_runs_one_arm(db: asyncpg.Pool, api: httpx.Client, bank: str) -> None:
    await insert_units(db, bank, [Unit("Marmalade recipe from grandma.")])
    body = recall(api, bank, "marmalade", preset="keyword-only", trace=True)
    assert list(body["trace"]["arms"]) == ["keyword"]
    assert body["results"][0]["scores"]["arms"] == {"keyword": 1}


def test_unknown_preset_and_bad_token_are_400(api: httpx.Client, bank: str) -> None:
    r = api.post(f"/v1/banks/{bank}/recall", json={"query": "x", "preset": "nope"})
    assert r.status_code == 400 and "keyword-only" in r.json()["detail"]
    r = api.post(f"/v1/banks/{bank}/recall", json={"query": "x", "after": "42"})
    assert r.status_code == 400 and "token" in r.json()["detail"]
    assert api.post(f"/v1/banks/{bank}/recall", json={"query": "x", "extra": 1}).status_code == 422


@pytest.mark.parametrize("query", ['"', "???", "the of and", "🦜🎉", "a" * 2000, "-not & | !(x) 'y':*", "or"])
async def test_weird_queries_do_not_error(db: asyncpg.Pool, api: httpx.Client, bank: str, query: str) -> None:
    await insert_units(db, bank, [Unit("Anything at all.")])
    recall(api, bank, query, trace=True)


def test_empty_bank_returns_empty_results(api: httpx.Client, bank: str) -> None:
    body = recall(api, bank, "anything")
    assert body["results"] == [] and body["tokens_used"] == 0


async def test_trace_shape(db: asyncpg.Pool, api: httpx.Client, bank: str) -> None:
    await insert_units(
        db, bank, [Unit("Walrus colonies gather on the ice in June.", occurred_start=day(2024, 6, 3))]
    )
    trace = recall(
        api, bank, "walrus colonies in June", query_timestamp=QUERY_TS, trace=True, preset="graph"
    )["trace"]
    assert set(trace["arms"]) == {"semantic", "keyword", "graph", "temporal"}
    for arm in trace["arms"].values():
        assert set(arm) >= {"count", "elapsed_ms", "candidates"}
    assert trace["arms"]["semantic"]["candidates"][0]["rank"] == 1
    assert set(trace["fused"]["top"][0]) == {"id", "rrf", "arms"}
    assert set(trace["rerank_prefilter"]) == {"kept", "dropped", "cap", "boosts", "composition"}
    assert trace["rerank_prefilter"]["cap"] == 200
    # No cross-encoder here: relevance is the query-fact cosine plus the keyword score.
    assert trace["rerank"]["method"] == "cosine+keyword"
    assert set(trace["boosts"][0]) >= {"recency", "temporal", "proof", "final"}
    assert set(trace["packing"]) >= {"kept", "skipped", "tokens"}
    assert set(trace["timings_ms"]) >= {"embed", "arms", "fusion", "rerank", "boosts", "packing", "total"}


def test_retain_then_recall_after_token_sees_the_fact(api: httpx.Client, bank: str) -> None:
    r = api.post(
        f"/v1/banks/{bank}/memories",
        json={
            "items": [
                {"content": "Alice adopted a grey cat named Pixel.", "speaker": "Alice", "message_id": "m-1"}
            ]
        },
    )
    assert r.status_code == 202, r.text
    token = r.json()["consistency"]["token"]
    body = recall(api, bank, "What is the name of Alice's cat?", after=token, trace=True)
    assert any("Pixel" in res["text"] for res in body["results"])
    assert body["results"][0]["source_message_ids"] == ["m-1"]
    assert "consistency_wait" in body["trace"]["timings_ms"]


def test_include_entities_and_chunks_after_retain(api: httpx.Client, bank: str) -> None:
    r = api.post(
        f"/v1/banks/{bank}/memories",
        json={
            "items": [
                {"content": "Bruno opened a bakery in Naples.", "speaker": "Bruno", "message_id": "m-2"}
            ]
        },
    )
    token = r.json()["consistency"]["token"]
    body = recall(api, bank, "Bruno bakery", after=token, include={"entities": True, "chunks": True})
    top = body["results"][0]
    assert isinstance(top["entities"], list)
    assert "chunk" in top
    if top["chunk_id"] is not None and top["chunk"] is not None:
        assert top["chunk"]["id"] == top["chunk_id"] and "Bruno" in top["chunk"]["text"]
        small = recall(api, bank, "Bruno bakery", include={"chunks": True, "max_chunk_tokens": 2})
        assert count_tokens(small["results"][0]["chunk"]["text"]) <= 2


async def test_graph_arm_surfaces_an_entity_neighbour(db: asyncpg.Pool, api: httpx.Client, bank: str) -> None:
    seed = Unit("Alice works at Google as a software engineer.")
    neighbour = Unit("The quarterly offsite in Denver was cancelled.")
    await insert_units(db, bank, [seed, neighbour])
    await insert_entity(db, bank, "Google", [seed.id, neighbour.id])
    body = recall(api, bank, "Where does Alice work?", include={"entities": True}, graph_retriever="bfs")
    by_id = {r["id"]: r for r in body["results"]}
    # The graph arm ranks the neighbour first, through the shared entity (the semantic arm also
    # lists it, lower, since it keeps its nearest few whatever their similarity).
    assert by_id[str(neighbour.id)]["scores"]["arms"]["graph"] == 1
    assert by_id[str(seed.id)]["scores"]["arms"]["semantic"] == 1
    assert "graph" not in by_id[str(seed.id)]["scores"]["arms"]
    assert by_id[str(seed.id)]["entities"] == ["Google"]


async def test_before_an_event_is_dated_by_the_event_fact(
    db: asyncpg.Pool, api: httpx.Client, bank: str
) -> None:
    joined = Unit("Alice joined Google as an engineer.", occurred_start=day(2023, 6, 1))
    before = Unit("Alice taught maths at a high school.", occurred_start=day(2023, 3, 10))
    after = Unit("Alice led a search-quality project.", occurred_start=day(2023, 9, 20))
    await insert_units(db, bank, [joined, before, after])
    body = recall(
        api, bank, "What did Alice do before she joined Google?", query_timestamp=QUERY_TS, trace=True
    )
    window = body["temporal_window"]
    assert window["start"].startswith("2022-06-01") and window["end"].startswith("2023-06-01")
    temporal = [c["id"] for c in body["trace"]["arms"]["temporal"]["candidates"]]
    assert str(before.id) in temporal and str(after.id) not in temporal

    body = recall(
        api, bank, "What has Alice worked on since she joined Google?", query_timestamp=QUERY_TS, trace=True
    )
    assert body["temporal_window"]["start"].startswith("2023-06-01")
    temporal = [c["id"] for c in body["trace"]["arms"]["temporal"]["candidates"]]
    assert str(after.id) in temporal and str(before.id) not in temporal
    # An event nothing in the bank resembles gives no window at all.
    assert (
        recall(api, bank, "What happened before the zeppelin regatta?", query_timestamp=QUERY_TS)[
            "temporal_window"
        ]
        is None
    )


async def test_a_name_in_most_facts_weighs_half_in_the_query_vector(
    db: asyncpg.Pool, api: httpx.Client, bank: str
) -> None:
    bought = Unit("Melanie said to Caroline: I bought two figurines at the flea market.")
    about_her = Unit("Melanie said to Caroline: Melanie is Melanie, and Melanie's friends love Melanie.")
    chatter = [
        Unit(f"Melanie said to Caroline: note {i} about the weather and the garden.") for i in range(10)
    ]
    units = [bought, about_her, *chatter]
    await insert_units(db, bank, units)
    await insert_entity(db, bank, "Melanie", [u.id for u in units])  # in every fact
    await insert_entity(db, bank, "Caroline", [bought.id, about_her.id])  # in two: it selects

    def margin(preset: str) -> tuple[float, str | None]:
        body = recall(api, bank, "What has Melanie bought, Caroline?", preset=preset, trace=True)
        sims = {c["id"]: c["score"] for c in body["trace"]["arms"]["semantic"]["candidates"]}
        return sims[str(bought.id)] - sims[str(about_her.id)], body["trace"]["query_without_names"]

    blended, without = margin("default")
    as_asked, none = margin("no-name-blend")
    assert without == "What has bought, Caroline?"  # possessive-free; Caroline is not in most facts
    assert none is None
    assert blended > as_asked  # the purchase gains on the fact that only repeats her name


async def test_the_keyword_arm_leaves_out_a_name_in_most_facts(
    db: asyncpg.Pool, api: httpx.Client, bank: str
) -> None:
    bought = Unit("Melanie said to Caroline: I bought two figurines at the flea market.")
    chatter = [Unit(f"Melanie said to Caroline: note {i} about the weather.") for i in range(11)]
    await insert_units(db, bank, [bought, *chatter])
    await insert_entity(db, bank, "Melanie", [u.id for u in [bought, *chatter]])

    def keyword(query: str, preset: str) -> tuple[str, list[str]]:
        arm = recall(api, bank, query, preset=preset, trace=True)["trace"]["arms"]["keyword"]
        return arm["note"], [c["id"] for c in arm["candidates"]]

    note, found = keyword("What has Melanie bought?", "default")
    assert "melanie" not in note.split(" or ")
    assert found == [str(bought.id)]  # the chatter only shares her name
    note, found = keyword("What has Melanie bought?", "no-name-blend")
    assert "melanie" in note.split(" or ")
    assert found[0] == str(bought.id) and len(found) == 12
    assert keyword("Melanie's?", "default")[1] == []  # nothing left to search for, and no error


async def test_a_bank_owners_name_selects_nothing_in_a_small_bank(
    db: asyncpg.Pool, api: httpx.Client, bank: str
) -> None:
    # A person's own statements, each naming them: the name tells none apart.
    moved = Unit("Dana moved from Lisbon to Porto in March 2024 to work at a bakery.")
    sister = Unit("Dana's sister Ana visits Dana every August.")
    others = [
        Unit("Dana works as a pastry chef at Padaria Ribeiro."),
        Unit("Dana is allergic to peanuts."),
        Unit("Dana's cat is called Figo."),
        Unit("Dana plans to run the Porto marathon in November 2025."),
    ]
    units = [moved, sister, *others]
    await insert_units(db, bank, units)
    await insert_entity(db, bank, "Dana", [u.id for u in units])
    await insert_entity(db, bank, "Porto", [moved.id, others[-1].id])
    # The default preset runs no graph arm; naming a retriever switches it on, to check it too.
    body = recall(
        api, bank, "Where does Dana live now?", query_timestamp=QUERY_TS, trace=True, graph_retriever="bfs"
    )
    assert body["trace"]["query_without_names"] == "Where does live now?"
    arms = body["trace"]["arms"]
    # No keyword candidate on the name alone, and no graph node reached through it.
    assert "dana" not in arms["keyword"]["note"].split(" or ")
    assert len(arms["graph"]["candidates"]) < len(units) - 1
    assert body["trace"]["rerank"]["method"].startswith("cosine")
    assert body["results"][0]["id"] == str(moved.id)
    pets = recall(api, bank, "Does Dana have pets?", query_timestamp=QUERY_TS)
    assert pets["results"][0]["id"] == str(others[2].id)


async def test_a_name_in_fewer_facts_than_the_minimum_still_selects(
    db: asyncpg.Pool, api: httpx.Client, bank: str
) -> None:
    units = [Unit(f"Melanie went hiking on trail {i}.") for i in range(2)]
    await insert_units(db, bank, units)
    await insert_entity(db, bank, "Melanie", [u.id for u in units])  # every fact, but only two
    body = recall(api, bank, "Where did Melanie hike?", trace=True)
    assert body["trace"]["query_without_names"] is None
