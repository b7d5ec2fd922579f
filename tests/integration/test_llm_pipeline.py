"""The worker extracting through an OpenAI-compatible endpoint (a scripted test server that
the real `openai` client calls over HTTP)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tempr.streams.runtime import Supervisor
from tests.conftest import make_settings, running_stack, wait_until
from tests.llm_server import ScriptedLLMServer, reply_json, schema_name, status

pytestmark = pytest.mark.integration


def _extraction(body: dict[str, Any]) -> Any:
    """Answer every extraction request from the turns it carries: one fact per turn, with a
    causal link from the second fact to the first; a turn saying FAIL makes the server error."""
    system = body["messages"][0]["content"]
    user = next(m["content"] for m in body["messages"] if m["role"] == "user")
    if schema_name(body) == "consolidate_observations":  # not what these tests are about
        return reply_json({"observations": []})
    if "entity index" in system:  # the resolver asking about a borderline match
        return reply_json({"same": False, "reason": "a nickname alone does not settle it"})
    if "FAIL" in user:
        return status(500, "scripted outage")
    turns = json.loads(user[user.index("{") :])["turns"] if "{" in user else []
    facts = [
        {
            "text": f"{t['speaker']} reported: {t['content']}",
            "fact_type": "experience",
            "occurred_start": "2024-02-10",
            "entities": [{"name": t["speaker"], "kind": "person"}, {"name": "Zurich", "kind": "location"}],
            "source_message_ids": [t["message_id"]],
            "causal": [{"target_index": 0, "relation": "caused_by"}] if i == 1 else [],
        }
        for i, t in enumerate(turns)
    ]
    return reply_json({"facts": facts})


@pytest.fixture(scope="module")
def llm_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Supervisor, ScriptedLLMServer]]:
    with ScriptedLLMServer(default=_extraction) as server:
        settings = make_settings(
            tmp_path_factory.mktemp("llm"),
            llm_base_url=server.base_url,
            llm_model="scripted-model",
            llm_timeout_s=5.0,
            llm_max_retries=1,
        )
        with running_stack(settings) as supervisor:
            yield supervisor, server


def test_llm_facts_flow_through_the_pipeline(llm_stack: tuple[Supervisor, ScriptedLLMServer]) -> None:
    supervisor, server = llm_stack
    s = supervisor.settings
    with httpx.Client(base_url=f"http://{s.host}:{s.port}", timeout=30) as api:
        items = [
            {
                "content": "I moved to Zurich for the new job.",
                "speaker": "Iris",
                "conversation_id": "z",
                "message_id": "z1",
                "timestamp": "2024-02-11T09:00:00Z",
            },
            {
                "content": "So the job is why you moved to Zurich!",
                "speaker": "Omar",
                "conversation_id": "z",
                "message_id": "z2",
                "timestamp": "2024-02-11T09:01:00Z",
            },
        ]
        assert api.post("/v1/banks/llm-bank/memories", json={"items": items}).status_code == 202

        def stats() -> dict:
            return api.get("/v1/banks/llm-bank/stats").json()

        wait_until(lambda: stats()["messages"] == 2 and stats()["pending_events"] == 0, timeout=90)
        facts = api.get("/v1/banks/llm-bank/memories").json()["items"]
        assert sorted(f["text"] for f in facts) == [
            "Iris reported: I moved to Zurich for the new job.",
            "Omar reported: So the job is why you moved to Zurich!",
        ]
        assert sorted(f["source_message_ids"][0] for f in facts) == ["z1", "z2"]
        assert all(f["occurred_start"].startswith("2024-02-10") for f in facts)
        assert stats()["links_by_type"].get("caused_by") == 1
        names = {e["canonical_name"] for e in api.get("/v1/banks/llm-bank/entities").json()["items"]}
        assert {"Iris", "Omar", "Zurich"} <= names
        request = next(r for r in server.requests if "Zurich" in json.dumps(r))
        assert request["model"] == "scripted-model"
        assert request["response_format"]["type"] == "json_schema"

        # An endpoint that keeps failing: the chunk is dead-lettered with the reason, and
        # the next one still goes through.
        api.post(
            "/v1/banks/llm-bank/memories",
            json={"items": [{"content": "FAIL this one", "conversation_id": "f", "message_id": "f1"}]},
        )
        wait_until(
            lambda: any("scripted outage" in d["error"] for d in api.get("/v1/dead-letters").json()),
            timeout=90,
        )
        api.post(
            "/v1/banks/llm-bank/memories",
            json={
                "items": [
                    {
                        "content": "Iris likes fondue.",
                        "speaker": "Iris",
                        "conversation_id": "g",
                        "message_id": "g1",
                    }
                ]
            },
        )
        wait_until(
            lambda: any(
                "fondue" in f["text"] for f in api.get("/v1/banks/llm-bank/memories").json()["items"]
            ),
            timeout=90,
        )


def test_borderline_entity_matches_are_put_to_the_llm(
    llm_stack: tuple[Supervisor, ScriptedLLMServer],
) -> None:
    supervisor, server = llm_stack
    s = supervisor.settings
    with httpx.Client(base_url=f"http://{s.host}:{s.port}", timeout=30) as api:

        def settled() -> bool:
            st = api.get("/v1/banks/judge-bank/stats").json()
            return st["messages"] > 0 and st["pending_events"] == 0

        api.post(
            "/v1/banks/judge-bank/memories",
            json={
                "items": [
                    {
                        "content": "I bought a kayak.",
                        "speaker": "Melanie",
                        "conversation_id": "k1",
                        "message_id": "k1",
                    }
                ]
            },
        )
        wait_until(settled, timeout=90)
        api.post(
            "/v1/banks/judge-bank/memories",
            json={
                "items": [
                    {
                        "content": "I like rivers.",
                        "speaker": "Mel",
                        "conversation_id": "k2",
                        "message_id": "k2",
                    }
                ]
            },
        )
        wait_until(
            lambda: settled() and api.get("/v1/banks/judge-bank/stats").json()["messages"] == 2, timeout=90
        )
        names = {e["canonical_name"] for e in api.get("/v1/banks/judge-bank/entities").json()["items"]}
    # By the rule alone "Mel" would join "Melanie"; the LLM said no.
    assert {"Melanie", "Mel"} <= names
    asked = [r for r in server.requests if "entity index" in r["messages"][0]["content"]]
    assert asked and '"mention": "Mel"' in asked[-1]["messages"][-1]["content"]
