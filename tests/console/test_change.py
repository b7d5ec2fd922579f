"""Changes through the console: each asks for confirmation and says what happened; scopes
decide which buttons exist, and the server refuses (403) what a key may not do anyway."""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import re
import uuid

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect

from tempr.recall_api.auth import CONSOLE_COOKIE
from tempr.streams.publisher import create_producer
from tempr.streams.topics import MESSAGES
from tests.conftest import wait_until
from tests.console.conftest import BANK, DOC_FACT, DOCUMENT, ConsoleStack, login

pytestmark = pytest.mark.integration


def _produce_poison(bootstrap: str, marker: str) -> None:
    """A message event no stage can read (no ids, no content): it becomes a dead letter."""

    async def send() -> None:
        producer = create_producer(bootstrap)
        await producer.start()
        try:
            value = json.dumps({"event_type": "message", "schema_version": 1, "marker": marker}).encode()
            await producer.send_and_wait(MESSAGES.name, value=value, key=f"console-dlq/{marker}".encode())
        finally:
            await producer.stop()

    # Playwright's sync API holds this thread's event loop: the producer runs in a thread.
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, send()).result()


def _letters(api: httpx.Client, marker: str) -> list[dict[str, object]]:
    return [
        d for d in api.get("/v1/dead-letters", params={"limit": 1000}).json() if marker in str(d["payload"])
    ]


def test_replay_a_dead_letter(admin_page: Page, console: ConsoleStack) -> None:
    marker = uuid.uuid4().hex
    _produce_poison(console.supervisor.settings.bootstrap, marker)
    with console.client() as api:
        wait_until(lambda: len(_letters(api, marker)) == 1, timeout=90)
        [letter] = _letters(api, marker)
    page = admin_page
    page.click("header nav a:has-text('Pipeline')")
    row = page.locator("table.letters tr", has_text=marker[:8]).filter(has=page.locator("button"))
    expect(row).to_have_count(1)
    expect(row).to_contain_text(str(letter["stage"]))
    confirmations: list[str] = []
    page.on("dialog", lambda d: confirmations.append(d.message))
    row.locator("button:has-text('Replay')").click()
    expect(page.locator("table.letters td", has_text="Replayed: sent again to")).to_have_count(1)
    assert confirmations and "Replay this letter" in confirmations[0]
    with console.client() as api:
        replayed = next(d for d in _letters(api, marker) if d["id"] == letter["id"])
    assert replayed["replayed_at"] is not None
    # Still unreadable: it fails again as a new letter, which "Replay all" sends once more.
    with console.client() as api:
        wait_until(lambda: len(_letters(api, marker)) == 2, timeout=90)
        shown = {d["id"] for d in _letters(api, marker)}
    page.reload()
    page.click("button:has-text('Replay all')")
    expect(page.locator("#replay-all-result")).to_contain_text(re.compile(r"Replayed [1-9]\d* dead letter"))
    with console.client() as api:  # (each fails again later, as a new letter)
        assert all(d["replayed_at"] is not None for d in _letters(api, marker) if d["id"] in shown)


def test_delete_a_document_and_see_its_facts_go(admin_page: Page, console: ConsoleStack) -> None:
    page = admin_page
    page.goto(f"/console/banks/{BANK}/memories?text=Brindisi")
    expect(page.locator("table.facts a[hx-get]", has_text="Brindisi")).not_to_have_count(0)
    page.goto(f"/console/banks/{BANK}/documents")
    row = page.locator("tr", has_text=DOCUMENT)
    row.locator("button:has-text('Delete')").click()
    expect(row).to_contain_text(re.compile(rf"Document {DOCUMENT} deleted with its [1-9]\d* facts?"))
    page.goto(f"/console/banks/{BANK}/memories?text=Brindisi")
    expect(page.locator("#memories")).to_contain_text("0 facts")
    expect(page.locator("table.facts a[hx-get]")).to_have_count(0)
    with console.client() as api:
        items = api.get(f"/v1/banks/{BANK}/memories", params={"limit": 1000}).json()["items"]
    assert not [m for m in items if DOC_FACT.split()[3] in m["text"]]


def test_a_key_without_admin_sees_no_delete_buttons_and_gets_403(
    browser: Browser, console: ConsoleStack
) -> None:
    page = login(browser, console, "reader")
    try:
        page.goto(f"/console/banks/{BANK}")
        expect(page.locator("h1")).to_contain_text("Console demo")
        expect(page.locator("button.danger")).to_have_count(0)
        expect(page.locator("button:has-text('Save profile')")).to_have_count(0)
        expect(page.locator("header nav a:has-text('Pipeline')")).to_have_count(0)
        page.goto(f"/console/banks/{BANK}/documents")
        expect(page.locator("button.danger")).to_have_count(0)
        # Tried anyway, with the page's own CSRF token: the server refuses.
        for path in (f"/console/banks/{BANK}/delete", f"/console/banks/{BANK}/documents/x/delete"):
            status = page.evaluate(
                """async (path) => {
                    const token = JSON.parse(document.body.getAttribute('hx-headers'))['x-csrf-token'];
                    const r = await fetch(path, {method: 'POST', headers: {'x-csrf-token': token}});
                    return r.status; }""",
                path,
            )
            assert status == 403, path
        page.goto("/console/pipeline")
        expect(page.locator("h1")).to_contain_text("403")
        with console.client() as api:
            assert api.get(f"/v1/banks/{BANK}").status_code == 200  # still there
    finally:
        page.context.close()


def test_the_key_cookie_is_http_only_strict_and_forms_need_the_csrf_token(
    admin_page: Page, console: ConsoleStack
) -> None:
    [cookie] = [c for c in admin_page.context.cookies() if c["name"] == CONSOLE_COOKIE]
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict" and cookie["path"] == "/console"
    assert admin_page.evaluate("document.cookie") == ""  # page scripts cannot read the key
    cookies = {CONSOLE_COOKIE: cookie["value"]}
    with console.client() as api:
        before = api.get(f"/v1/banks/{BANK}").json()["disposition"]
    with httpx.Client(base_url=console.url, cookies=cookies, timeout=60) as client:
        assert client.get(f"/console/banks/{BANK}").status_code == 200
        refused = client.post(f"/console/banks/{BANK}/profile", data={"empathy": "1"})
        assert refused.status_code == 403 and "CSRF" in refused.text
        # The REST API never takes the cookie for a key.
        assert client.get(f"/v1/banks/{BANK}").status_code == 401
    with console.client() as api:
        assert api.get(f"/v1/banks/{BANK}").json()["disposition"] == before


def test_create_a_bank_then_delete_it_with_confirmation(admin_page: Page, console: ConsoleStack) -> None:
    page = admin_page
    bank = f"console-new-{uuid.uuid4().hex[:6]}"
    page.click("summary:has-text('Create a bank')")
    page.fill("#new-bank-id", bank)
    page.fill("#new-bank-name", "Fresh")
    page.click("form button:has-text('Create')")
    page.wait_for_url(f"**/console/banks/{bank}?done=created")
    expect(page.locator("#flash")).to_contain_text(f"Bank {bank} created.")
    expect(page.locator("h1")).to_contain_text("Fresh")
    confirmations: list[str] = []
    page.on("dialog", lambda d: confirmations.append(d.message))
    page.click(f"button:has-text('Delete bank {bank}')")
    page.wait_for_url("**/console/banks?done=deleted*")
    assert confirmations and "cannot be undone" in confirmations[-1]
    expect(page.locator("#flash")).to_contain_text(f"Bank {bank} deleted")
    with console.client() as api:
        assert api.get(f"/v1/banks/{bank}").status_code == 404
