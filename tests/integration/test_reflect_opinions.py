"""Reflect, opinions and observations end to end, through the API alone, on the embedded
runtime with an OpenAI-compatible test server (the real `openai` client calls it over HTTP).

The scripted "model" below is deliberately simple and rule-based, so every change of an
opinion's confidence is predictable: facts saying "dominates" reinforce, "slow" weakens,
"abandoning" contradicts.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tempr.streams.runtime import Supervisor
from tests.conftest import make_settings, running_stack, wait_until
from tests.llm_server import ScriptedLLMServer, reply_json, schema_name, status

pytestmark = pytest.mark.integration

OPINION = "I think Python is the best language for data science because of its libraries."
REVISED = "I now think Python is fading for data science as teams move on."


def _user(body: dict[str, Any]) -> str:
    return next(m["content"] for m in body["messages"] if m["role"] == "user")


def _brain(body: dict[str, Any]) -> Any:
    name, user = schema_name(body), _user(body)
    if name == "extract_facts":
        turns = json.loads(user[user.index("{") :])["turns"]
        return reply_json(
            {
                "facts": [
                    {
                        "text": t["content"],
                        "fact_type": "world",
                        "entities": [{"name": "Python", "kind": "product"}]
                        if "Python" in t["content"]
                        else [],
                        "source_message_ids": [t["message_id"]],
                    }
                    for t in turns
                ]
            }
        )
    if name == "same_entity":
        return reply_json({"same": True, "reason": "same name"})
    if name == "reflect":
        numbers = [int(n) for n in re.findall(r"^\[(\d+)\]", user, flags=re.MULTILINE)]
        return reply_json(
            {
                "answer": "Python, without a doubt.",
                "based_on": numbers[:1],
                "opinions": [
                    {"text": OPINION, "confidence": 0.7, "entities": ["Python"], "based_on": numbers}
                ],
            }
        )
    if name == "evaluate_opinion":
        facts = user.split("NEW FACTS:", 1)[1]
        if "abandoning" in facts:
            return reply_json(
                {
                    "verdict": "contradict",
                    "revised_text": REVISED,
                    "revised_confidence": 0.35,
                    "reasoning": "r",
                }
            )
        if "slow" in facts:
            return reply_json({"verdict": "weaken", "reasoning": "speed matters"})
        if "dominates" in facts:
            return reply_json({"verdict": "reinforce", "reasoning": "market share"})
        return reply_json({"verdict": "neutral", "reasoning": "unrelated"})
    if name == "consolidate_observations":
        payload = json.loads(user)
        return reply_json(
            {
                "observations": [
                    {
                        "text": f"{payload['entity']} keeps coming up when people talk about data work.",
                        "updates": 1 if payload["existing_observations"] else None,
                        "facts": [f["number"] for f in payload["facts"]],
                    }
                ]
            }
        )
    if name == "merge_background":
        return reply_json({"background": "I was born in Texas. I review programming languages."})
    return status(400, f"unexpected request {name!r}")


@pytest.fixture(scope="module")
def brain_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[httpx.Client, ScriptedLLMServer]]:
    with ScriptedLLMServer(default=_brain) as server:
        settings = make_settings(
            tmp_path_factory.mktemp("reflect"),
            llm_base_url=server.base_url,
            llm_model="scripted-model",
            llm_timeout_s=5.0,
            llm_max_retries=1,
        )
        with running_stack(settings) as supervisor, _client(supervisor) as api:
            yield api, server


def _client(supervisor: Supervisor) -> httpx.Client:
    s = supervisor.settings
    return httpx.Client(base_url=f"http://{s.host}:{s.port}", timeout=60)


def _retain(api: httpx.Client, bank: str, message_id: str, content: str) -> None:
    item = {"content": content, "speaker": "Ana", "conversation_id": message_id, "message_id": message_id}
    token = api.post(f"/v1/banks/{bank}/memories", json={"items": [item]}).json()["consistency"]["token"]
    assert api.post(f"/v1/banks/{bank}/recall", json={"query": content, "after": token}).status_code == 200


def _last(server: ScriptedLLMServer, name: str) -> dict[str, Any]:
    # Background agents call the model too; pick the request of the kind under test.
    return next(r for r in reversed(server.requests) if schema_name(r) == name)


def _opinion(api: httpx.Client, bank: str, opinion_id: str) -> dict[str, Any]:
    return api.get(f"/v1/banks/{bank}/opinions/{opinion_id}").json()


def _observations(api: httpx.Client, bank: str) -> list[dict[str, Any]]:
    return api.get(f"/v1/banks/{bank}/memories", params={"fact_type": "observation"}).json()["items"]


def test_opinion_forms_moves_with_evidence_and_keeps_its_history(
    brain_stack: tuple[httpx.Client, ScriptedLLMServer],
) -> None:
    api, server = brain_stack
    bank = "critic"
    created = api.put(
        f"/v1/banks/{bank}",
        json={
            "name": "Rita",
            "background": "I review programming languages.",
            "disposition": {"skepticism": 5},
        },
    )
    assert created.status_code == 201
    _retain(api, bank, "m1", "Python has excellent data science libraries such as pandas.")

    answer = api.post(
        f"/v1/banks/{bank}/reflect", json={"query": "What do you think of Python for data science?"}
    )
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["text"] == "Python, without a doubt."
    assert [b["text"] for b in body["based_on"]] == [
        "Python has excellent data science libraries such as pandas."
    ]
    assert body["usage"]["total_tokens"] > 0
    [formed] = body["opinions_formed"]
    assert (formed["text"], formed["confidence"], formed["entities"]) == (OPINION, 0.7, ["Python"])
    assert formed["based_on"] == [body["based_on"][0]["id"]]
    prompt = _last(server, "reflect")
    system = prompt["messages"][0]["content"]
    assert "Your name: Rita" in system and "Be highly skeptical" in system
    assert "I review programming languages." in system

    # The opinion travels through the log and is materialized with its provenance.
    wait_until(lambda: api.get(f"/v1/banks/{bank}/opinions/{formed['id']}").status_code == 200, timeout=60)
    opinion = _opinion(api, bank, formed["id"])
    assert opinion["confidence"] == pytest.approx(0.7)
    assert opinion["entities"] == ["Python"] and opinion["history"] == []
    assert opinion["evidence_ids"] == formed["based_on"]

    _retain(api, bank, "m2", "Python dominates machine learning, with most frameworks Python-first.")
    wait_until(lambda: len(_opinion(api, bank, formed["id"])["history"]) == 1, timeout=60)
    assert _opinion(api, bank, formed["id"])["confidence"] == pytest.approx(0.8)
    # Two facts about Python make a pattern: the first observation, backed by both.
    wait_until(lambda: [o["proof_count"] for o in _observations(api, bank)] == [2], timeout=60)
    first_observation = _observations(api, bank)[0]["id"]

    _retain(api, bank, "m3", "Python is slow for tight numerical loops.")
    wait_until(lambda: len(_opinion(api, bank, formed["id"])["history"]) == 2, timeout=60)
    assert _opinion(api, bank, formed["id"])["confidence"] == pytest.approx(0.65)

    _retain(api, bank, "m4", "Teams are abandoning Python for Rust in production data pipelines.")
    wait_until(lambda: len(_opinion(api, bank, formed["id"])["history"]) == 3, timeout=60)
    final = _opinion(api, bank, formed["id"])
    assert (final["text"], final["confidence"]) == (REVISED, pytest.approx(0.35))
    history = final["history"]
    assert [h["verdict"] for h in history] == ["reinforce", "weaken", "contradict"]
    assert [round(h["previous_confidence"], 2) for h in history] == [0.7, 0.8, 0.65]
    assert history[2]["previous_text"] == OPINION and history[2]["new_text"] == REVISED
    assert all(len(h["evidence_ids"]) == 1 for h in history)

    # The revised opinion is what recall and a second reflect now see.
    hits = api.post(f"/v1/banks/{bank}/recall", json={"query": "Python fading", "types": ["opinion"]}).json()
    assert hits["results"][0]["text"] == REVISED
    assert hits["results"][0]["confidence"] == pytest.approx(0.35)
    again = api.post(
        f"/v1/banks/{bank}/reflect", json={"query": "Is Python still your pick?", "form_opinions": False}
    )
    assert again.status_code == 200 and again.json()["opinions_formed"] == []
    assert REVISED in _user(_last(server, "reflect")) and "confidence 0.35" in _user(_last(server, "reflect"))

    # One observation about Python, backed by every Python fact, rewritten rather than copied.
    wait_until(lambda: [o["proof_count"] for o in _observations(api, bank)] == [4], timeout=60)
    [observation] = _observations(api, bank)
    assert observation["id"] == first_observation  # rewritten in place, never copied
    assert observation["text"] == "Python keeps coming up when people talk about data work."
    assert len(observation["evidence_ids"]) == 4
    assert sorted(observation["source_message_ids"]) == ["m1", "m2", "m3", "m4"]


def test_structured_reflect_is_validated_against_the_response_schema(
    brain_stack: tuple[httpx.Client, ScriptedLLMServer],
) -> None:
    api, server = brain_stack
    assert api.put("/v1/banks/structured", json={}).status_code == 201
    schema = {
        "type": "object",
        "properties": {"verdict": {"enum": ["yes", "no"]}, "why": {"type": "string"}},
        "required": ["verdict"],
    }
    server.script(
        reply_json({"answer": {"verdict": "maybe"}, "based_on": [], "opinions": []}),
        reply_json({"answer": {"verdict": "yes", "why": "it fits"}, "based_on": [], "opinions": []}),
    )
    before = len(server.requests)
    answer = api.post("/v1/banks/structured/reflect", json={"query": "Yes or no?", "response_schema": schema})
    assert answer.status_code == 200, answer.text
    assert answer.json()["structured"] == {"verdict": "yes", "why": "it fits"}
    assert json.loads(answer.json()["text"]) == {"verdict": "yes", "why": "it fits"}
    first, retry = server.requests[before:]
    assert first["response_format"]["json_schema"]["schema"]["properties"]["answer"] == schema
    assert "does not match response_schema" in _user(retry)

    bad = api.post("/v1/banks/structured/reflect", json={"query": "q", "response_schema": {"type": 5}})
    assert bad.status_code == 400 and "not a valid JSON schema" in bad.text
    server.script(*[reply_json({"answer": {"verdict": "maybe"}, "based_on": [], "opinions": []})] * 2)
    off = api.post("/v1/banks/structured/reflect", json={"query": "q", "response_schema": schema})
    assert off.status_code == 502 and "response_schema" in off.text


def test_disposition_shapes_the_prompt(brain_stack: tuple[httpx.Client, ScriptedLLMServer]) -> None:
    api, server = brain_stack
    api.put("/v1/banks/trusting", json={"disposition": {"skepticism": 1, "empathy": 5, "bias_strength": 0.9}})
    api.put("/v1/banks/literal", json={"disposition": {"literalism": 5, "empathy": 1, "bias_strength": 0.1}})
    systems = {}
    for bank in ("trusting", "literal"):
        assert api.post(f"/v1/banks/{bank}/reflect", json={"query": "How are you?"}).status_code == 200
        systems[bank] = _last(server, "reflect")["messages"][0]["content"]
    assert "face value" in systems["trusting"] and "deeply empathetic" in systems["trusting"]
    assert "strongly shapes" in systems["trusting"]
    assert "literally and precisely" in systems["literal"] and "leave feelings aside" in systems["literal"]
    assert "barely shapes" in systems["literal"]
    assert "face value" not in systems["literal"]


def test_background_is_merged_by_the_llm(brain_stack: tuple[httpx.Client, ScriptedLLMServer]) -> None:
    api, server = brain_stack
    api.put("/v1/banks/bio", json={"background": "I was born in Colorado. I review programming languages."})
    merged = api.patch("/v1/banks/bio", json={"background": "You were born in Texas."})
    assert merged.status_code == 200
    assert merged.json()["background"] == "I was born in Texas. I review programming languages."
    request = _last(server, "merge_background")
    assert "Colorado" in _user(request) and "You were born in Texas." in _user(request)


def test_reflect_after_a_retain_sees_it(brain_stack: tuple[httpx.Client, ScriptedLLMServer]) -> None:
    api, _ = brain_stack
    item = {
        "content": "Python 3.13 removed the GIL as an option.",
        "conversation_id": "gil",
        "message_id": "g1",
    }
    token = api.post("/v1/banks/fresh/memories", json={"items": [item]}).json()["consistency"]["token"]
    answer = api.post("/v1/banks/fresh/reflect", json={"query": "What changed in Python?", "after": token})
    assert answer.status_code == 200, answer.text
    assert [b["text"] for b in answer.json()["based_on"]] == [item["content"]]
    bad = api.post("/v1/banks/fresh/reflect", json={"query": "q", "after": "yesterday"})
    assert bad.status_code == 400 and "invalid 'after' token" in bad.text
