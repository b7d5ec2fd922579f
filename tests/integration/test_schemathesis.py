"""Property test over the live OpenAPI: whatever schemathesis sends, no 5xx, and every answer
matches the schema documented for it. Bounded: a few examples per operation, no shrinking.

Driven through hypothesis directly (one strategy per operation) rather than schemathesis'
pytest plugin, whose fixture loader does not run under pytest 9.
"""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import content_type_conformance, response_schema_conformance

from tempr.streams.runtime import Supervisor

pytestmark = pytest.mark.integration

EXAMPLES_PER_OPERATION = 12
CHECKS = [not_a_server_error, response_schema_conformance, content_type_conformance]


def test_no_5xx_and_answers_match_their_schema(stack: Supervisor) -> None:
    s = stack.settings
    schema = schemathesis.openapi.from_url(f"http://{s.host}:{s.port}/openapi.json")
    failures: list[str] = []
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) > 15
    for operation in operations:

        @settings(
            max_examples=EXAMPLES_PER_OPERATION,
            deadline=None,
            phases=[Phase.explicit, Phase.generate],
            suppress_health_check=list(HealthCheck),
            derandomize=True,
            database=None,
        )
        @given(case=operation.as_strategy())
        def call(case: schemathesis.Case) -> None:
            case.call_and_validate(checks=CHECKS, timeout=60)

        try:
            call()
        except Exception as exc:  # every operation is tried; all failures are reported together
            failures.append(f"{operation.label}: {str(exc)[:1500]}")
    assert not failures, "\n\n".join(failures)
