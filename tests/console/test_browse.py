"""Through the console in a real browser: a bank, a fact found by text, its provenance, a
recall and its trace, a profile trait edited."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from tests.console.conftest import BANK, OTHER, ConsoleStack

pytestmark = pytest.mark.integration


def test_open_a_bank_find_a_fact_by_text_and_open_its_provenance(admin_page: Page) -> None:
    page = admin_page
    page.fill("#q", "demo")  # the list narrows as one types
    expect(page.locator("#banks")).not_to_contain_text(OTHER)
    page.click(f"#banks a:has-text('{BANK}')")
    expect(page.locator("h1")).to_contain_text("Console demo")
    expect(page.locator(".cards")).to_contain_text("facts")

    page.click("nav.banknav a:has-text('Memories')")
    page.fill("#f-text", "adoption")
    page.click("form.filters button:has-text('Filter')")
    expect(page).to_have_url(re.compile(r"text=adoption"))  # the filtered table is in
    rows = page.locator("#memories table.facts a[hx-get]")
    expect(rows.filter(has_text="ferry")).to_have_count(0)
    expect(rows).not_to_have_count(0)
    for text in rows.all_inner_texts():
        assert "adoption" in text.lower()
    rows.first.click()
    detail = page.locator("section.detail")
    expect(detail).to_contain_text("Source messages, as they arrived")
    # The message as journaled: the speaker, its id and its words.
    message = detail.locator("blockquote", has_text="adoption agencies")
    expect(message).to_contain_text("Caroline")
    expect(message).to_contain_text("D1:2")
    expect(detail).to_contain_text("Links")


def test_run_a_recall_and_read_the_trace(admin_page: Page) -> None:
    page = admin_page
    page.goto(f"/console/banks/{BANK}/recall")
    page.fill("#r-query", "What did Melanie paint?")
    page.select_option("#r-budget", "low")
    page.click("form button:has-text('Recall')")
    result = page.locator("#recall-result")
    expect(result.locator("ol.results li").first).to_contain_text("sunrise")
    # Why: the arms that found it, its fused rank, the relevance and boosts.
    result.locator("ol.results li details summary").first.click()
    why = result.locator("ol.results li details").first
    expect(why).to_contain_text("Found by")
    expect(why).to_contain_text("Fused rank")
    # Each arm's candidates with ranks; the timings as bars; the cut.
    expect(result.locator("details summary b", has_text="semantic")).to_be_visible()
    expect(result.locator("details summary b", has_text="keyword")).to_have_count(1)
    bars = result.locator(".timings .bar")
    expect(bars.filter(has_text="arms")).to_have_count(1)
    assert bars.count() >= 5
    width = bars.filter(has_text="arms").locator(".fill").evaluate("e => e.getBoundingClientRect().width")
    assert width > 0
    table = result.locator("table.trace")
    expect(table.locator("tr.packed").first).to_contain_text("packed")
    expect(table.locator("tbody tr.packed").first).to_contain_text("semantic")


def test_edit_a_profile_trait(admin_page: Page, console: ConsoleStack) -> None:
    page = admin_page
    page.goto(f"/console/banks/{BANK}")
    with console.client() as api:
        before = api.get(f"/v1/banks/{BANK}").json()["disposition"]["empathy"]
    new = 5 if before != 5 else 2
    page.select_option("#p-empathy", str(new))
    page.click("button:has-text('Save profile')")  # the confirmation is accepted
    expect(page.locator("#profile-result")).to_contain_text(f"empathy {new}")
    with console.client() as api:
        after = api.get(f"/v1/banks/{BANK}").json()
    assert after["disposition"]["empathy"] == new
    assert after["name"] == "Console demo" and after["background"] == "I keep notes."
    page.reload()
    expect(page.locator("#p-empathy")).to_have_value(str(new))


def test_an_invalid_trait_is_refused_naming_the_field(admin_page: Page) -> None:
    page = admin_page
    page.goto(f"/console/banks/{BANK}")
    page.fill("#p-bias", "7")
    page.evaluate("document.querySelector('#p-bias').removeAttribute('max')")  # past the browser's own check
    page.click("button:has-text('Save profile')")
    expect(page.locator("#profile-result .flash.error")).to_contain_text(re.compile("bias_strength"))


def test_an_entity_opens_into_its_facts_on_a_timeline(admin_page: Page) -> None:
    page = admin_page
    page.goto(f"/console/banks/{BANK}/entities")
    page.locator("table a[href*='/entities/']", has_text="Caroline").first.click()
    expect(page.locator("h1")).to_contain_text("Caroline")
    items = page.locator("ol.timeline li")
    expect(items).not_to_have_count(0)
    days = [d for d in page.locator("ol.timeline time").all_inner_texts() if d != "undated"]
    assert days == sorted(days) and days, days
    expect(items.filter(has_text="adoption")).not_to_have_count(0)


def test_the_graph_shows_a_neighbourhood_and_a_click_expands_it(
    admin_page: Page, console: ConsoleStack
) -> None:
    with console.client() as api:
        facts = api.get(f"/v1/banks/{BANK}/memories", params={"limit": 100}).json()["items"]
        centre = next(
            f["id"]
            for f in facts
            if api.get(f"/console/banks/{BANK}/graph/data", params={"fact": f["id"]}).json()["edges"]
        )
        data = api.get(f"/console/banks/{BANK}/graph/data", params={"fact": centre}).json()
    assert data["centres"] == [centre]
    assert {e["type"] for e in data["edges"]} <= {"semantic", "temporal", "entity", "causes", "caused_by"}
    assert all(centre in (e["source"], e["target"]) for e in data["edges"])  # a neighbourhood, not the bank
    page = admin_page
    page.goto(f"/console/banks/{BANK}/graph?fact={centre}")
    buttons = page.locator("#graph-list li button")
    expect(buttons).to_have_count(len(data["nodes"]))
    other = next(n for n in data["nodes"] if n["id"] != centre)
    with page.expect_response(lambda r: f"fact={other['id']}" in r.url and r.status == 200):
        buttons.filter(has_text=other["label"][:40]).first.click()  # keyboard-reachable: a button per fact
    assert page.locator("#graph canvas").count() > 0  # cytoscape drew it
