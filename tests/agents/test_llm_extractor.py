"""LLM-mode extraction of one chunk, scripted through the real HTTP server."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from tempr.agents.extraction.llm import extract_with_llm, parse_when
from tempr.errors import UpstreamLLMError
from tempr.inference.llm import LLMClient, RetryPolicy
from tempr.inference.prompts.extract_facts import PROMPT_VERSION, ExtractionResponse, build_messages
from tempr.schemas.events import ChunkEvent, ExtractedFact, MessageEvent
from tempr.settings import Settings
from tests.llm_server import ScriptedLLMServer, reply_json

BANK = "bank-1"
CONVERSATION = "conv-1"


def message(message_id: str, speaker: str, minute: int, content: str, tags: list[str]) -> MessageEvent:
    return MessageEvent(
        event_id=uuid.uuid4(),
        bank_id=BANK,
        message_id=message_id,
        content=content,
        speaker=speaker,
        timestamp=datetime(2024, 3, 5, 10, minute, tzinfo=UTC),
        conversation_id=CONVERSATION,
        context="weekly catch-up",
        tags=tags,
        received_at=datetime(2024, 3, 5, 10, 30, tzinfo=UTC),
    )


def make_chunk() -> ChunkEvent:
    return ChunkEvent(
        chunk_id=uuid.uuid4(),
        bank_id=BANK,
        conversation_id=CONVERSATION,
        messages=[
            message("m1", "Alice", 0, "I adopted a puppy yesterday! Her name is Luna.", ["pets"]),
            message("m2", "Bob", 5, "Congrats! Are you still moving to Berlin in April?", []),
            message("m3", "Alice", 7, "No, because of her I'm staying in Munich.", ["moving"]),
        ],
    )


RESPONSE = {
    "facts": [
        {
            "text": "Alice adopted a puppy named Luna on 2024-03-04.",
            "fact_type": "world",
            "occurred_start": "2024-03-04",
            "occurred_end": "2024-03-04",
            "entities": [
                {"name": "Alice", "kind": "PERSON"},
                {"name": "Luna", "kind": "animal"},
                {"name": "alice", "kind": "person"},
            ],
            "source_message_ids": ["m1", "m99"],
            "causal": [
                {"target_index": 1, "relation": "causes"},
                {"target_index": 7, "relation": "enables"},
                {"target_index": 0, "relation": "causes"},
                {"target_index": -1, "relation": "prevents"},
            ],
        },
        {
            "text": "Bob asked Alice whether she was still moving to Berlin in April 2024; "
            "Alice answered that she is staying in Munich because of her puppy Luna.",
            "fact_type": "world",
            "occurred_start": "2024-04",
            "occurred_end": None,
            "entities": [
                {"name": "Bob", "kind": "person"},
                {"name": "Berlin", "kind": "GPE"},
                {"name": "Munich", "kind": "location"},
            ],
            "source_message_ids": ["m3", "m2"],
            "causal": [{"target_index": 0, "relation": "Caused By"}],
        },
        {
            "text": "Alice and Bob caught up on 2024-03-05 at 08:00 Berlin time.",
            "fact_type": "experience",
            "occurred_start": "2024-03-05T09:00:00+01:00",
            "occurred_end": "sometime soon",
            "entities": [],
            "source_message_ids": ["nope"],
            "causal": [],
        },
    ]
}


@pytest.fixture(scope="module")
def running_server() -> Iterator[ScriptedLLMServer]:
    with ScriptedLLMServer() as srv:
        yield srv


@pytest.fixture
def server(running_server: ScriptedLLMServer) -> ScriptedLLMServer:
    running_server.reset()
    return running_server


def make_client(server: ScriptedLLMServer) -> LLMClient:
    settings = Settings(llm_base_url=server.base_url, llm_model="extractor", llm_max_retries=1)
    return LLMClient(settings, retry=RetryPolicy(max_retries=1, base_delay_s=0.01))


async def extract(server: ScriptedLLMServer, chunk: ChunkEvent) -> list[ExtractedFact]:
    server.script(reply_json(RESPONSE))
    async with make_client(server) as client:
        return await extract_with_llm(chunk, client)


async def test_scripted_extraction(server: ScriptedLLMServer) -> None:
    facts = await extract(server, make_chunk())

    assert [f.text for f in facts] == [f["text"] for f in RESPONSE["facts"]]
    assert [f.fact_type for f in facts] == ["world", "world", "experience"]
    assert len({f.fact_id for f in facts}) == 3
    assert all(f.metadata["prompt_version"] == PROMPT_VERSION for f in facts)


async def test_provenance_is_filtered_to_chunk_messages(server: ScriptedLLMServer) -> None:
    first, second, third = await extract(server, make_chunk())

    assert first.source_message_ids == ["m1"]
    assert second.source_message_ids == ["m2", "m3"]  # chunk order
    assert third.source_message_ids == ["m1", "m2", "m3"]  # nothing real cited → whole chunk
    assert first.mentioned_at == datetime(2024, 3, 5, 10, 0, tzinfo=UTC)
    assert second.mentioned_at == datetime(2024, 3, 5, 10, 7, tzinfo=UTC)
    assert first.tags == ["pets"]
    assert second.tags == ["moving"]
    assert third.tags == ["pets", "moving"]
    assert {f.conversation_id for f in (first, second, third)} == {CONVERSATION}
    assert first.context == "weekly catch-up"


async def test_dates_become_aware_utc_ranges(server: ScriptedLLMServer) -> None:
    first, second, third = await extract(server, make_chunk())

    assert first.occurred_start == datetime(2024, 3, 4, tzinfo=UTC)
    assert first.occurred_end == datetime(2024, 3, 4, 23, 59, 59, 999999, tzinfo=UTC)
    assert second.occurred_start == datetime(2024, 4, 1, tzinfo=UTC)
    assert second.occurred_end is None
    assert third.occurred_start == datetime(2024, 3, 5, 8, 0, tzinfo=UTC)
    assert third.occurred_end is None  # "sometime soon" is no date


async def test_entities_and_causal_links_are_cleaned(server: ScriptedLLMServer) -> None:
    first, second, _ = await extract(server, make_chunk())

    assert [(e.name, e.kind) for e in first.entities] == [("Alice", "person"), ("Luna", "other")]
    assert [(e.name, e.kind) for e in second.entities] == [
        ("Bob", "person"),
        ("Berlin", "location"),
        ("Munich", "location"),
    ]
    assert [(c.target_index, c.relation) for c in first.causal] == [(1, "causes")]
    assert [(c.target_index, c.relation) for c in second.causal] == [(0, "caused_by")]


async def test_ids_are_deterministic_and_independent_of_chunk_id(
    server: ScriptedLLMServer,
) -> None:
    chunk = make_chunk()
    once = await extract(server, chunk)
    again = await extract(server, chunk)
    rechunked = await extract(server, chunk.model_copy(update={"chunk_id": uuid.uuid4()}))

    ids = [f.fact_id for f in once]
    assert [f.fact_id for f in again] == ids
    assert [f.fact_id for f in rechunked] == ids
    assert once == again


async def test_request_carries_prompt_and_schema(server: ScriptedLLMServer) -> None:
    await extract(server, make_chunk())

    body = server.last_request
    assert body["model"] == "extractor"
    assert body["response_format"]["json_schema"]["name"] == "extract_facts"
    assert body["response_format"]["json_schema"]["schema"] == (ExtractionResponse.model_json_schema())
    user = body["messages"][1]["content"]
    payload = json.loads(user.split("\n\n", 1)[1])
    assert [t["message_id"] for t in payload["turns"]] == ["m1", "m2", "m3"]
    assert payload["turns"][0]["timestamp"] == "2024-03-05T10:00:00+00:00"
    assert payload["turns"][2]["speaker"] == "Alice"


async def test_unusable_answer_raises_upstream_error(server: ScriptedLLMServer) -> None:
    server.default = lambda _: {"facts": [{"fact_type": "world"}]}  # no text
    async with make_client(server) as client:
        with pytest.raises(UpstreamLLMError, match="validation error"):
            await extract_with_llm(make_chunk(), client)
    assert len(server.requests) == 2


def test_prompt_states_the_extraction_rules() -> None:
    system, user = build_messages(make_chunk())
    for rule in ("self-contained", "pronoun", "absolute", "source_message_ids", "causal"):
        assert rule in system
    assert "Luna" in user and "m3" in user


@pytest.mark.parametrize(
    ("value", "end", "expected"),
    [
        ("2023", False, datetime(2023, 1, 1, tzinfo=UTC)),
        ("2023", True, datetime(2023, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)),
        ("2024-02", True, datetime(2024, 2, 29, 23, 59, 59, 999999, tzinfo=UTC)),
        ("2023-12", True, datetime(2023, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)),
        ("2024-07-14", False, datetime(2024, 7, 14, tzinfo=UTC)),
        ("2024-07-14T12:30:00Z", True, datetime(2024, 7, 14, 12, 30, tzinfo=UTC)),
        ("2024-07-14T12:30:00", False, datetime(2024, 7, 14, 12, 30, tzinfo=UTC)),
        ("2024-13-01", False, None),
        ("last week", False, None),
        ("", False, None),
        (None, True, None),
    ],
)
def test_parse_when(value: str | None, end: bool, expected: datetime | None) -> None:
    assert parse_when(value, end=end) == expected
