"""What the schemathesis passes share: the checks, and one bounded hypothesis run per operation
of a live OpenAPI (tests/integration/test_schemathesis.py open, tests/security keyed).

Driven through hypothesis directly (one strategy per operation) rather than schemathesis'
pytest plugin, whose fixture loader does not run under pytest 9.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import content_type_conformance, response_schema_conformance


def no_undocumented_server_error(
    ctx: object, response: schemathesis.Response, case: schemathesis.Case
) -> None:
    """A 5xx is a failure unless the operation documents it as a deliberate answer (reflect's
    501 "no LLM configured", a consistency wait's 504)."""
    documented = set(case.operation.definition.raw.get("responses", {}))
    if response.status_code >= 500 and str(response.status_code) not in documented:
        not_a_server_error(ctx, response, case)  # type: ignore[arg-type]


@schemathesis.serializer("application/x-ndjson")
def json_lines(ctx: object, value: object) -> bytes:
    """A bank import's body (JSON lines): whatever was generated, as one line or as text."""
    return value.encode() if isinstance(value, str) else json.dumps(value).encode() + b"\n"


CHECKS = [no_undocumented_server_error, response_schema_conformance, content_type_conformance]


def operations(url: str) -> list[schemathesis.APIOperation]:
    schema = schemathesis.openapi.from_url(f"{url}/openapi.json")
    return [result.ok() for result in schema.get_all_operations()]


def drop_unissued_token(case: schemathesis.Case) -> None:
    """A well-formed consistency token this server never issued is waited on until the
    documented 504 (tests/recall/test_recall_consistency.py): 30 s of nothing, each time."""
    if isinstance(case.body, dict) and re.fullmatch(r"j\d+", str(case.body.get("after"))):
        del case.body["after"]


def run_each_operation(
    ops: list[schemathesis.APIOperation],
    examples: int,
    per_case: Callable[[schemathesis.Case], None],
) -> list[str]:
    """Every operation tried with `examples` derandomized cases (no shrinking); the failures of
    all operations, reported together."""
    failures: list[str] = []
    for operation in ops:

        @settings(
            max_examples=examples,
            deadline=None,
            phases=[Phase.explicit, Phase.generate],
            suppress_health_check=list(HealthCheck),
            derandomize=True,
            database=None,
        )
        @given(case=operation.as_strategy())
        def call(case: schemathesis.Case) -> None:
            drop_unissued_token(case)
            per_case(case)

        try:
            call()
        except Exception as exc:
            failures.append(f"{operation.label}: {str(exc)[:1500]}")
    return failures
