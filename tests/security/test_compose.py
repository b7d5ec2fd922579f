"""docker-compose runs with keys and SASL and ships no password: every secret is a required
variable from `.env` (`${VAR:?message}`), so compose stops and names what is missing."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

COMPOSE = Path(__file__).resolve().parents[2] / "docker-compose.yml"
SECRET_NAME = re.compile(r"PASSWORD|PEPPER|SECRET|JAAS", re.IGNORECASE)


def _values(node: object, path: str = "") -> list[tuple[str, str]]:
    if isinstance(node, dict):
        return [v for k, child in node.items() for v in _values(child, f"{path}.{k}")]
    if isinstance(node, list):
        return [v for i, child in enumerate(node) for v in _values(child, f"{path}[{i}]")]
    return [(path, str(node))]


def test_compose_requires_keys_and_sasl_and_has_no_default_secret() -> None:
    text = COMPOSE.read_text()
    compose = yaml.safe_load(text)
    env = compose["x-tempr-env"]
    assert env["TEMPR_AUTH"] == "keys"
    assert env["TEMPR_KAFKA_SECURITY_PROTOCOL"].startswith("SASL_")
    secrets = [(p, v) for p, v in _values(compose) if SECRET_NAME.search(p) or "password=" in v]
    assert len(secrets) >= 5
    for path, value in secrets:
        if path.endswith("TEMPR_LLM_API_KEY"):
            continue
        assert "${" in value, f"{path} is a literal secret"
        for ref in re.findall(r"\$\{([^}]*)\}", value):
            assert ":?" in ref, f"{path}: ${{{ref}}} must fail without .env, not default"
    assert (
        "api" in compose["services"] and compose["services"]["api"]["environment"]["TEMPR_HOST"] == "0.0.0.0"
    )
