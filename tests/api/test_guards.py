"""Request guards without a server: loopback detection, the exposure warning, the 422 shape."""

from __future__ import annotations

import pytest
from fastapi.exceptions import RequestValidationError

from tempr.recall_api.errors import _errors
from tempr.recall_api.guards import exposure_warning, is_loopback


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "::1", "[::1]", "127.0.0.2"])
def test_loopback_binds_are_quiet(host: str) -> None:
    assert is_loopback(host) and exposure_warning(host) is None


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.4", "tempr.example.com"])
def test_other_binds_warn_loudly(host: str) -> None:
    warning = exposure_warning(host)
    assert not is_loopback(host) and warning is not None and "no API keys" in warning


def test_validation_errors_never_echo_the_input() -> None:
    exc = RequestValidationError(
        [{"loc": ("body", "max_tokens"), "msg": "finite", "type": "x", "input": float("nan")}]
    )
    assert _errors(exc) == [{"loc": ["body", "max_tokens"], "msg": "finite", "type": "x"}]
