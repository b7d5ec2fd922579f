"""The production topology as processes: Apache Kafka, a password-protected Postgres on TCP,
`tempr migrate`, two workers, one API, configured only by TEMPR_* variables; and
docker-compose.yml, which must set the same variables and run the same commands."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest
import yaml

from tests.conftest import wait_until
from tests.production_stack import (
    COMMANDS,
    COMPOSE_ONLY_KAFKA_SASL,
    WORKER_REPLICAS,
    ProductionStack,
    api_env,
    tempr_env,
)

pytestmark = pytest.mark.integration

COMPOSE = Path(__file__).resolve().parents[2] / "docker-compose.yml"
# Where compose and the processes may differ: addresses, container paths, the password and the
# secrets compose requires from `.env` (the process stack makes its own).
_ADDRESSES = {"TEMPR_DATABASE_URL", "TEMPR_KAFKA_BOOTSTRAP", "HF_HOME", "TEMPR_HOST", "TEMPR_PORT"}
_SECRETS = {"TEMPR_AUTH_PEPPER", "TEMPR_CONTROL_KEY"}
# Documented exceptions: compose's Kafka speaks SASL_PLAINTEXT (PLAIN, user `tempr`); the process
# stack's Apache Kafka 2.3.0 listens in PLAINTEXT, so it sets none of these. SASL on the client
# side is covered by tests/streams (kafka_client_options); a SASL listener on the process
# stack's broker is still to do.
_COMPOSE_ONLY = COMPOSE_ONLY_KAFKA_SASL


def _resolve(value: Any) -> str:
    """Compose's `${VAR:-default}` / `${VAR:?message}` as compose resolves them with VAR unset
    (POSTGRES_PASSWORD aside, which compose requires)."""

    def one(m: re.Match[str]) -> str:
        name, op, rest = m.group(1), m.group(2), m.group(3)
        if name == "POSTGRES_PASSWORD":
            return "secret"
        return rest if op == ":-" else ""

    return re.sub(r"\$\{(\w+)(:-|:\?)?([^}]*)\}", one, str(value))


def _compose() -> dict[str, Any]:
    return yaml.safe_load(COMPOSE.read_text())


def test_compose_sets_the_same_variables_and_commands_as_the_process_stack() -> None:
    services = _compose()["services"]
    ours = tempr_env(
        "postgresql://tempr:secret@127.0.0.1:5432/tempr",
        "127.0.0.1:9092",
        Path("/models"),
        auth_pepper="pepper",
        control_key="control",
    )
    for service, command in COMMANDS.items():
        assert services[service]["command"] == command, service
        env = {k: _resolve(v) for k, v in services[service]["environment"].items()}
        expected = ours | (api_env("0.0.0.0", 8000) if service == "api" else {})
        assert set(env) == set(expected) | set(_COMPOSE_ONLY), (
            f"{service}: {set(env) ^ (set(expected) | set(_COMPOSE_ONLY))}"
        )
        assert not set(_COMPOSE_ONLY) & set(expected), "an exception the process stack now sets: drop it"
        for name, value in (expected | _COMPOSE_ONLY).items():
            if name not in _ADDRESSES | _SECRETS:
                assert env[name] == value, f"{service}: {name} is {env[name]!r} in compose, {value!r} here"
        for name in _SECRETS:  # required from .env: `${NAME:?message}`, no default
            assert re.fullmatch(r"\$\{\w+:\?[^}]*\}", str(services[service]["environment"][name])), name
        assert env["TEMPR_DATABASE_URL"].startswith("postgresql://tempr:secret@postgres:5432/tempr")
        assert env["TEMPR_KAFKA_BOOTSTRAP"] == "kafka:9092"
    assert services["worker"]["deploy"]["replicas"] == WORKER_REPLICAS
    assert services["postgres"]["environment"]["POSTGRES_USER"] == "tempr"
    assert services["postgres"]["environment"]["POSTGRES_DB"] == "tempr"


@pytest.fixture(scope="module")
def production(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProductionStack]:
    stack = ProductionStack(tmp_path_factory.mktemp("production"))
    stack.start()
    try:
        yield stack
    finally:
        stack.stop()


def test_the_process_stack_retains_and_recalls_through_kafka(production: ProductionStack) -> None:
    assert set(production.procs) == {"migrate", "worker-1", "worker-2", "api"}
    assert production.procs["migrate"].returncode == 0
    assert production.api_key is not None
    with httpx.Client(base_url=production.base_url, timeout=90) as anonymous:  # keys, as in compose
        assert anonymous.post("/v1/banks/prod/recall", json={"query": "bicycles"}).status_code == 401
    headers = {"Authorization": f"Bearer {production.api_key}"}
    with httpx.Client(base_url=production.base_url, timeout=90, headers=headers) as api:
        health = api.get("/health").json()
        assert health["status"] == "ok"
        assert health["details"]["group_lag"] is not None  # the API found a real Kafka
        items = [
            {
                "content": f"Production probe {i}: I repaired {i} bicycles in Ghent.",
                "speaker": "Nadia",
                "conversation_id": f"c{i % 3}",
                "message_id": f"p{i}",
            }
            for i in range(20)
        ]
        token = api.post("/v1/banks/prod/memories", json={"items": items}).json()["consistency"]["token"]
        found = api.post(
            "/v1/banks/prod/recall", json={"query": "How many bicycles did Nadia repair?", "after": token}
        )
        assert found.status_code == 200
        texts = " ".join(r["text"] for r in found.json()["results"])
        assert "bicycles" in texts

        def all_stored() -> bool:
            facts = api.get("/v1/banks/prod/memories", params={"limit": 100}).json()["items"]
            cited = {m for f in facts for m in f["source_message_ids"]}
            return cited == {f"p{i}" for i in range(20)} and api.get("/health").json()["pending_events"] == 0

        wait_until(all_stored, timeout=120)
    for name in ("worker-1", "worker-2", "api"):
        assert production.procs[name].poll() is None, f"{name} died"
    # A password is required: the database refuses a wrong one.
    assert production.postgres is not None

    async def wrong_password() -> None:
        await asyncpg.connect(production.postgres.url.replace(production.postgres.password, "wrong"))

    with pytest.raises(asyncpg.InvalidPasswordError):
        asyncio.run(wrong_password())
