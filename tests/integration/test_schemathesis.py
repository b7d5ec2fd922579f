"""Property test over the live OpenAPI: whatever schemathesis sends, no 5xx, and every answer
matches the schema documented for it. Bounded: a few examples per operation, no shrinking.
"""

from __future__ import annotations

import pytest
import schemathesis

from tempr.streams.runtime import Supervisor
from tests.schemathesis_support import CHECKS, operations, run_each_operation

pytestmark = pytest.mark.integration

EXAMPLES_PER_OPERATION = 12


def test_no_5xx_and_answers_match_their_schema(stack: Supervisor) -> None:
    s = stack.settings
    ops = operations(f"http://{s.host}:{s.port}")
    assert len(ops) > 15

    def check(case: schemathesis.Case) -> None:
        case.call_and_validate(checks=CHECKS, timeout=60)

    failures = run_each_operation(ops, EXAMPLES_PER_OPERATION, check)
    assert not failures, "\n\n".join(failures)
