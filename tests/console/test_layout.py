"""Every page at phone width without sideways scrolling, and usable with the keyboard alone."""

from __future__ import annotations

import pytest
from playwright.sync_api import Browser, expect

from tests.console.conftest import BANK, ConsoleStack, login

pytestmark = pytest.mark.integration

PAGES = [
    "/console/banks",
    f"/console/banks/{BANK}",
    f"/console/banks/{BANK}/memories",
    f"/console/banks/{BANK}/recall",
    f"/console/banks/{BANK}/entities",
    f"/console/banks/{BANK}/graph",
    f"/console/banks/{BANK}/documents",
    f"/console/banks/{BANK}/reflect",
    f"/console/banks/{BANK}/opinions",
    "/console/pipeline",
]


def test_every_page_fits_a_phone(browser: Browser, console: ConsoleStack) -> None:
    page = login(browser, console, "admin", width=390, height=844)
    try:
        for path in PAGES:
            response = page.goto(path)
            assert response is not None and response.status == 200, path
            wide = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
            assert wide <= 1, (path, wide)
        page.goto(f"/console/banks/{BANK}/reflect")  # no LLM here: the page says why
        expect(page.locator("main")).to_contain_text("no LLM is configured")
    finally:
        page.context.close()


def test_keyboard_alone_reaches_a_fact_and_its_provenance(browser: Browser, console: ConsoleStack) -> None:
    page = login(browser, console, "admin")
    try:
        page.goto(f"/console/banks/{BANK}/memories")
        page.keyboard.press("Tab")  # the first stop is the skip link
        assert page.evaluate("document.activeElement.textContent") == "Skip to content"
        page.keyboard.press("Enter")
        link = page.locator("table.facts a[hx-get]").first
        for _ in range(60):  # Tab until the first fact is focused, as a keyboard user would
            page.keyboard.press("Tab")
            if link.evaluate("e => e === document.activeElement"):
                break
        else:
            raise AssertionError("Tab never reached the first fact")
        page.keyboard.press("Enter")
        expect(page.locator("section.detail")).to_contain_text("Source messages")
    finally:
        page.context.close()
