"""The published OpenAPI document: every endpoint described, every example valid, every
error response typed."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from tempr.recall_api.main import create_app
from tempr.schemas.api import RetainRequest
from tempr.schemas.banks import BankIn, BankPatch
from tempr.schemas.operations import BankReplayRequest
from tempr.schemas.recall import RecallRequest
from tempr.schemas.reflect import ReflectRequest


@pytest.fixture(scope="module")
def spec() -> dict[str, Any]:
    return create_app().openapi()


def _operations(spec: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [(method, path, op) for path, ops in spec["paths"].items() for method, op in ops.items()]


def test_every_endpoint_is_described(spec: dict[str, Any]) -> None:
    paths = {f"{m.upper()} {p}" for m, p, _ in _operations(spec)}
    for expected in (
        "POST /v1/banks/{bank_id}/memories",
        "POST /v1/banks/{bank_id}/recall",
        "POST /v1/banks/{bank_id}/reflect",
        "PUT /v1/banks/{bank_id}",
        "PATCH /v1/banks/{bank_id}",
        "DELETE /v1/banks/{bank_id}",
        "GET /v1/banks",
        "GET /v1/banks/{bank_id}/opinions/{opinion_id}",
        "POST /v1/banks/{bank_id}/replay",
        "POST /v1/dead-letters/{letter_id}/replay",
        "GET /health",
    ):
        assert expected in paths
    for method, path, op in _operations(spec):
        assert op.get("summary"), f"{method} {path} has no summary"
        ok = [c for c in op["responses"] if c.startswith("2")]
        assert ok, f"{method} {path} documents no success response"
        assert any("content" in op["responses"][c] for c in ok), f"{method} {path}: success has no schema"


def test_every_error_response_is_typed(spec: dict[str, Any]) -> None:
    for method, path, op in _operations(spec):
        for code, response in op["responses"].items():
            if code[0] in "45" and code != "422":
                schema = response["content"]["application/json"]["schema"]
                assert schema["$ref"].split("/")[-1] in {"ErrorBody", "Health"}, f"{method} {path} {code}"
                assert response.get("description"), f"{method} {path} {code}"


@pytest.mark.parametrize(
    "model", [RetainRequest, RecallRequest, ReflectRequest, BankIn, BankPatch, BankReplayRequest]
)
def test_request_examples_are_published_and_valid(spec: dict[str, Any], model: type[BaseModel]) -> None:
    examples = spec["components"]["schemas"][model.__name__]["examples"]
    assert examples
    for example in examples:
        model.model_validate(example)


def test_request_bodies_carry_examples(spec: dict[str, Any]) -> None:
    for method, path, op in _operations(spec):
        body = op.get("requestBody")
        if body is None:
            continue
        if "application/json" not in body["content"]:  # a stream (bank import): an example of its lines
            assert all(c.get("example") for c in body["content"].values()), f"{method} {path}"
            continue
        schema = body["content"]["application/json"]["schema"]
        ref = schema.get("$ref") or next(s["$ref"] for s in schema["anyOf"] if "$ref" in s)
        assert spec["components"]["schemas"][ref.split("/")[-1]].get("examples"), f"{method} {path}"
