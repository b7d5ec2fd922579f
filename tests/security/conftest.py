"""One embedded stack with keys required, for every test of tests/security that needs a
server (package scope: it stops when the package's tests are done)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest

from tempr.streams.runtime import Supervisor
from tests.conftest import make_settings, running_stack, wait_until


@dataclass(frozen=True)
class AuthStack:
    supervisor: Supervisor
    admin_key: str  # the bootstrap key: read, write, admin on every bank

    @property
    def url(self) -> str:
        s = self.supervisor.settings
        return f"http://{s.host}:{s.port}"

    def client(self, key: str | None) -> httpx.Client:
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=60)


@pytest.fixture(scope="package")
def auth_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AuthStack]:
    settings = make_settings(
        tmp_path_factory.mktemp("tempr-auth"),
        auth="keys",
        # A recall waiting on another bank's token runs into this limit: keep the tests quick.
        recall_timeout_s=6.0,
    )
    with running_stack(settings) as supervisor:
        assert supervisor.bootstrap_key, "the first start with keys prints an admin key"
        yield AuthStack(supervisor, supervisor.bootstrap_key)


@pytest.fixture(scope="package")
def admin(auth_stack: AuthStack) -> Iterator[httpx.Client]:
    with auth_stack.client(auth_stack.admin_key) as client:
        yield client


A, B = "tenant-a-1", "tenant-b-1"
SECRET_A = "Alice keeps a red bicycle named Rosinante in Lisbon."
SECRET_B = "Bruno hides the launch code 7731 in the blue vase in Oslo."

# name → (scopes, bank patterns)
KEYS: dict[str, tuple[list[str], list[str]]] = {
    "rw-a": (["read", "write"], ["tenant-a-*"]),
    "r-a": (["read"], ["tenant-a-*"]),
    "w-a": (["write"], ["tenant-a-*"]),
    "admin-a": (["admin"], ["tenant-a-*"]),
    "rw-b1": (["read", "write"], [B]),
}


@dataclass(frozen=True)
class World:
    """Keys by name (their whole secret) and two tenants' banks, each with a document."""

    keys: dict[str, str]


def _retain(client: httpx.Client, bank: str, content: str, document_id: str) -> None:
    r = client.post(
        f"/v1/banks/{bank}/memories",
        json={"items": [{"content": content, "speaker": "Narrator", "document_id": document_id}]},
    )
    assert r.status_code == 202, r.text


@pytest.fixture(scope="package")
def world(auth_stack: AuthStack, admin: httpx.Client) -> World:
    keys = {"admin": auth_stack.admin_key}
    for name, (scopes, banks) in KEYS.items():
        r = admin.post("/v1/keys", json={"name": name, "scopes": scopes, "banks": banks})
        assert r.status_code == 201, r.text
        keys[name] = r.json()["key"]
    for bank in (A, B):
        assert admin.put(f"/v1/banks/{bank}", json={"name": bank}).status_code in (200, 201)
    _retain(admin, A, SECRET_A, "doc-a")
    _retain(admin, B, SECRET_B, "doc-b")
    for bank in (A, B):
        wait_materialized(admin, bank)
    return World(keys=keys)


def wait_materialized(client: httpx.Client, bank: str) -> None:
    """Until the bank has facts and nothing pending (recall's own wait is bounded by the
    stack's short recall time limit)."""

    def done() -> bool:
        stats = client.get(f"/v1/banks/{bank}/stats").json()
        return stats["pending_events"] == 0 and sum(stats["facts_by_type"].values()) > 0

    wait_until(done, timeout=120, interval=0.5)
