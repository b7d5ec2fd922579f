"""One keyed embedded stack for every console test, a bank with a conversation and a document,
and a headless Debian Chromium driven by Playwright (never a downloaded browser)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest
from playwright.sync_api import Browser, Page, sync_playwright

from tempr.streams.runtime import Supervisor
from tests.conftest import make_settings, running_stack, wait_until

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]

BANK = "console-demo"
OTHER = "console-other"
DOCUMENT = "trip-notes"
DOC_FACT = "The ferry to Brindisi leaves Patras at nine"
CONVERSATION = [
    ("Caroline", "I went to a LGBTQ support group yesterday and it was really powerful."),
    ("Melanie", "I painted a sunrise over the lake last week."),
    ("Caroline", "I am researching adoption agencies because I want to give a child a home."),
    ("Melanie", "My kids love the beach; we went camping there in July."),
]


@dataclass(frozen=True)
class ConsoleStack:
    supervisor: Supervisor
    keys: dict[str, str]  # admin, reader (read only), writer (read + write)

    @property
    def url(self) -> str:
        s = self.supervisor.settings
        return f"http://{s.host}:{s.port}"

    def client(self, key: str = "admin") -> httpx.Client:
        return httpx.Client(
            base_url=self.url, headers={"Authorization": f"Bearer {self.keys[key]}"}, timeout=60
        )


def _materialized(client: httpx.Client, bank: str) -> bool:
    stats = client.get(f"/v1/banks/{bank}/stats").json()
    return stats["pending_events"] == 0 and stats["facts"] > 0


@pytest.fixture(scope="package")
def console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConsoleStack]:
    settings = make_settings(tmp_path_factory.mktemp("tempr-console"), auth="keys")
    with running_stack(settings) as supervisor:
        assert supervisor.bootstrap_key
        keys = {"admin": supervisor.bootstrap_key}
        stack = ConsoleStack(supervisor, keys)
        with stack.client() as admin:
            for name, scopes in (("reader", ["read"]), ("writer", ["read", "write"])):
                r = admin.post("/v1/keys", json={"name": name, "scopes": scopes, "banks": ["console-*"]})
                assert r.status_code == 201, r.text
                keys[name] = r.json()["key"]
            r = admin.put(f"/v1/banks/{BANK}", json={"name": "Console demo", "background": "I keep notes."})
            assert r.status_code in (200, 201), r.text
            items = [
                {
                    "content": text,
                    "speaker": speaker,
                    "conversation_id": "c1",
                    "message_id": f"D1:{i}",
                    "timestamp": f"2023-05-0{i + 1}T10:00:00Z",
                }
                for i, (speaker, text) in enumerate(CONVERSATION)
            ]
            items.append(
                {"content": f"{DOC_FACT} every morning.", "speaker": "Guide", "document_id": DOCUMENT}
            )
            assert admin.post(f"/v1/banks/{BANK}/memories", json={"items": items}).status_code == 202
            other = [{"content": "Bruno keeps a blue vase in Oslo.", "speaker": "Bruno"}]
            assert admin.post(f"/v1/banks/{OTHER}/memories", json={"items": other}).status_code == 202
            for bank in (BANK, OTHER):
                wait_until(lambda bank=bank: _materialized(admin, bank), timeout=180, interval=0.5)
        yield stack


@pytest.fixture
def browser(console: ConsoleStack) -> Iterator[Browser]:
    # One per test, after the stack: Playwright's sync API keeps an event loop running in this
    # thread while it is open, so asyncio.run (a stack's start-up, a test's producer) must come
    # before, after, or in another thread (a launch takes about a second).
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


def login(browser: Browser, console: ConsoleStack, key: str, *, width: int = 1280, height: int = 900) -> Page:
    """A fresh browser context logged in through the console's own form."""
    context = browser.new_context(viewport={"width": width, "height": height}, base_url=console.url)
    context.set_default_timeout(60_000)
    page = context.new_page()
    page.on("dialog", lambda d: d.accept())  # every confirmation is answered yes
    page.goto("/console/banks")
    assert "/console/login" in page.url
    page.fill("#key", console.keys[key])
    page.click("button:has-text('Log in')")
    page.wait_for_url("**/console/banks")
    return page


@pytest.fixture
def admin_page(browser: Browser, console: ConsoleStack) -> Iterator[Page]:
    page = login(browser, console, "admin")
    yield page
    page.context.close()
