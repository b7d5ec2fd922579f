"""Forget and correct one fact from the console's memories page: each asks for confirmation or
a new text, goes through the same routes as the REST API, and a key without write sees neither."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect

from tests.conftest import wait_until
from tests.console.conftest import BANK, ConsoleStack, login

pytestmark = pytest.mark.integration


def _own_fact(api: httpx.Client, message_id: str, word: str) -> dict[str, Any]:
    items = api.get(f"/v1/banks/{BANK}/memories", params={"limit": 1000}).json()["items"]
    return next(f for f in items if f["source_message_ids"] == [message_id] and word in f["text"])


def _open(page: Page, fact: dict[str, Any], word: str) -> Any:
    page.goto(f"/console/banks/{BANK}/memories?text={word}")
    page.locator(f"table.facts a[href$='/memories/{fact['id']}']").click()
    detail = page.locator(f"#d-{fact['id']}")
    expect(detail.locator("section.detail")).to_have_count(1)
    return detail


def test_forget_a_fact_with_confirmation(admin_page: Page, console: ConsoleStack) -> None:
    with console.client() as api:
        fact = _own_fact(api, "D1:3", "camping")
    page = admin_page
    detail = _open(page, fact, "camping")
    confirmations: list[str] = []
    page.on("dialog", lambda d: confirmations.append(d.message))
    detail.locator("button:has-text('Forget')").click()
    expect(detail.locator("[role=status]")).to_contain_text("Fact forgotten")
    assert confirmations and "cannot be undone" in confirmations[-1]
    with console.client() as api:
        assert api.get(f"/v1/banks/{BANK}/memories/{fact['id']}").status_code == 404
        audit = api.get("/v1/audit", params={"bank_id": BANK}).json()["items"]
    assert any(
        r["action"] == "POST /console/banks/{bank_id}/memories/{unit_id}/forget"
        and r["detail"] == {"unit_id": fact["id"]}
        and r["status"] == 200
        for r in audit
    )
    page.goto(f"/console/banks/{BANK}/memories?text=camping")
    expect(page.locator(f"table.facts a[href$='/memories/{fact['id']}']")).to_have_count(0)


def test_correct_a_fact_through_the_pipeline(browser: Browser, console: ConsoleStack) -> None:
    with console.client() as api:
        fact = _own_fact(api, "D1:0", "support group")
    page = login(browser, console, "writer")
    try:
        detail = _open(page, fact, "support group")
        new = "Caroline went to a support group on Tuesday and found it powerful."
        detail.locator("textarea[name=text]").fill(new)
        detail.locator("input[name=reason]").fill("the day was wrong")
        detail.locator("button:has-text('Correct')").click()
        expect(detail.locator("[role=status]")).to_contain_text("Correction accepted")
        with console.client() as api:

            def applied() -> bool:
                return api.get(f"/v1/banks/{BANK}/memories/{fact['id']}").json()["text"] == new

            wait_until(applied, timeout=90)
            history = api.get(f"/v1/banks/{BANK}/memories/{fact['id']}").json()["history"]
        assert [(h["text"], h["reason"]) for h in history] == [(fact["text"], "the day was wrong")]
        # An empty text is refused with the field named, and changes nothing.
        detail = _open(page, {"id": fact["id"]}, "Tuesday")
        detail.locator("textarea[name=text]").evaluate(
            "t => { t.removeAttribute('required'); t.value = ''; }"
        )
        detail.locator("button:has-text('Correct')").click()
        expect(detail.locator("[role=status]")).to_contain_text("text")
    finally:
        page.context.close()


def test_a_reader_sees_neither_button_and_gets_403(browser: Browser, console: ConsoleStack) -> None:
    with console.client() as api:
        fact = _own_fact(api, "D1:2", "adoption")
    page = login(browser, console, "reader")
    try:
        detail = _open(page, fact, "adoption")
        expect(detail.locator("button:has-text('Forget')")).to_have_count(0)
        expect(detail.locator("button:has-text('Correct')")).to_have_count(0)
        status = page.evaluate(
            """async (path) => {
                const token = JSON.parse(document.body.getAttribute('hx-headers'))['x-csrf-token'];
                const r = await fetch(path, {method: 'POST', headers: {'x-csrf-token': token}});
                return r.status; }""",
            f"/console/banks/{BANK}/memories/{fact['id']}/forget",
        )
        assert status == 403
        with console.client() as api:
            assert api.get(f"/v1/banks/{BANK}/memories/{fact['id']}").status_code == 200
    finally:
        page.context.close()
