"""Screenshots of every console page at desktop and phone width, into docs/console/.

    python -m bench.console_screenshots [--url URL] [--sessions 3] [--out docs/console] [--json FILE]

Without --url it starts the embedded runtime (open mode, loopback), retains the first
--sessions sessions of LoCoMo conv-26 (default: all 19, about 1,000 facts) into bank `locomo-26` with a document and one poison
record (for a dead letter), waits until they are materialized, then drives Debian's headless
Chromium through the console. Prints tables (each page's time to load; the graph's
neighbourhood reads over the bank) and writes JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import json
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from playwright.sync_api import Page, sync_playwright

from bench.common import (
    REPO,
    embedded_settings,
    print_table,
    retain_items,
    start_supervisor,
    summarize,
    wait_until,
    write_json,
)
from tempr.conversations import read_conversations
from tempr.streams.publisher import create_producer
from tempr.streams.topics import MESSAGES

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]  # fmt: skip
BANK = "locomo-26"
WIDTHS = {"desktop": (1280, 1000), "phone": (390, 844)}


def seed(url: str, sessions: int, bootstrap: str | None) -> None:
    conversations = read_conversations(REPO.parent / "shared" / "data" / "locomo" / "conv-26.json")[:sessions]
    items = [i.model_dump(mode="json", exclude_none=True) for c in conversations for i in c.items]
    items.append({"content": "The ferry to Brindisi leaves Patras at nine.", "document_id": "trip-notes"})
    with httpx.Client(base_url=url, timeout=120) as api:
        api.put(
            f"/v1/banks/{BANK}", json={"name": "Caroline & Melanie", "background": "I remember their chats."}
        )
        retain_items(api, BANK, items, batch=100)

        def drained() -> bool:
            stats = api.get(f"/v1/banks/{BANK}/stats").json()
            return stats["pending_events"] == 0 and stats["facts"] > 0

        wait_until(drained, timeout=1800, interval=1.0)
    if bootstrap:  # a record no stage can read: the pipeline page shows its dead letter

        async def poison() -> None:
            producer = create_producer(bootstrap)
            await producer.start()
            try:
                bad = json.dumps({"event_type": "message", "schema_version": 1}).encode()
                await producer.send_and_wait(MESSAGES.name, value=bad, key=f"{BANK}/poison".encode())
            finally:
                await producer.stop()

        asyncio.run(poison())
        time.sleep(3)


def first_href(page: Page, selector: str) -> str:
    return str(page.locator(selector).first.get_attribute("href"))


def shoot(url: str, out: Path) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    out.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        for form, (width, height) in WIDTHS.items():
            context = browser.new_context(viewport={"width": width, "height": height}, base_url=url)
            page = context.new_page()
            page.on("dialog", lambda d: d.accept())
            page.goto(f"/console/banks/{BANK}/entities")
            entity = first_href(page, "table a[href*='/entities/']")
            pages: list[tuple[str, str, str | None]] = [
                ("banks", "/console/banks", None),
                ("bank", f"/console/banks/{BANK}", None),
                ("memories", f"/console/banks/{BANK}/memories", "fact"),
                ("recall", f"/console/banks/{BANK}/recall", "recall"),
                ("entities", f"/console/banks/{BANK}/entities", None),
                ("entity", entity, None),
                ("graph", f"/console/banks/{BANK}/graph", "graph"),
                ("documents", f"/console/banks/{BANK}/documents", None),
                ("reflect", f"/console/banks/{BANK}/reflect", None),
                ("opinions", f"/console/banks/{BANK}/opinions", None),
                ("pipeline", "/console/pipeline", None),
            ]
            for name, path, action in pages:
                started = time.perf_counter()
                page.goto(path)
                page.wait_for_load_state("networkidle")
                if action == "fact":
                    page.locator("table.facts a[hx-get]").nth(2).click()
                    page.wait_for_selector("section.detail")
                elif action == "recall":
                    page.fill("#r-query", "When did Caroline go to the LGBTQ support group?")
                    page.click("form button:has-text('Recall')")
                    page.wait_for_selector("#recall-result ol.results")
                    page.locator("#recall-result ol.results details summary").first.click()
                    page.locator("#recall-result").scroll_into_view_if_needed()
                elif action == "graph":
                    page.wait_for_function("document.querySelectorAll('#graph-list li').length > 0")
                    page.wait_for_timeout(800)
                elapsed = (time.perf_counter() - started) * 1000
                file = out / f"{name}-{form}.png"
                page.screenshot(path=str(file))
                overflow = page.evaluate("document.documentElement.scrollWidth > window.innerWidth + 1")
                rows.append({"page": name, "width": form, "ms": round(elapsed), "file": str(file.relative_to(REPO)),
                             "bytes": file.stat().st_size, "overflows": overflow})  # fmt: skip
            context.close()
        browser.close()
    return rows


def graph_latency(url: str, samples: int) -> list[dict[str, Any]]:
    """The graph's data for facts and entities across the bank: time, nodes and edges."""
    out: list[dict[str, Any]] = []
    with httpx.Client(base_url=url, timeout=60) as api:
        stats = api.get(f"/v1/banks/{BANK}/stats").json()
        total = stats["facts"]
        step = max(1, total // samples)
        facts = [
            m["id"] for m in api.get(f"/v1/banks/{BANK}/memories", params={"limit": 1000}).json()["items"]
        ]
        entities = [
            e["id"] for e in api.get(f"/v1/banks/{BANK}/entities", params={"limit": 10}).json()["items"]
        ]
        for kind, ids in (("fact", facts[::step][:samples]), ("entity", entities)):
            for node in ids:
                started = time.perf_counter()
                r = api.get(f"/console/banks/{BANK}/graph/data", params={kind: node})
                ms = (time.perf_counter() - started) * 1000
                data = r.json()
                out.append({"kind": kind, "ms": ms, "nodes": len(data["nodes"]), "edges": len(data["edges"])})
    print_table(
        f"Graph neighbourhoods on {BANK}: {stats['facts']} facts, {sum(stats['links_by_type'].values())} links",
        ["centre", "n", "median ms", "p95 ms", "max nodes", "max edges"],
        [
            [kind, len(rows), summarize([r["ms"] for r in rows])["median"], summarize([r["ms"] for r in rows])["p95"],
             max(r["nodes"] for r in rows), max(r["edges"] for r in rows)]
            for kind in ("fact", "entity")
            if (rows := [r for r in out if r["kind"] == kind])
        ],
    )  # fmt: skip
    return out


def run(url: str, bootstrap: str | None, args: argparse.Namespace) -> None:
    seed(url, args.sessions, bootstrap)
    graph = graph_latency(url, samples=50)
    # Playwright's sync API keeps an event loop running in its thread: give it a thread of its own.
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        rows = pool.submit(shoot, url, args.out).result()
    print_table(
        "Console pages (time to load, with the recall / graph / fact actions)",
        ["page", "width", "ms", "bytes", "overflows"],
        [[r["page"], r["width"], r["ms"], r["bytes"], r["overflows"]] for r in rows],
    )
    with httpx.Client(base_url=url) as api:
        stats = api.get(f"/v1/banks/{BANK}/stats").json()
    write_json(
        args.json, {"bank": BANK, "sessions": args.sessions, "stats": stats, "pages": rows, "graph": graph}
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--url", help="a running server in open mode (default: start the embedded one)")
    parser.add_argument(
        "--sessions", type=int, default=19, help="LoCoMo conv-26 sessions to retain (19: all)"
    )
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "console")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    if args.url:
        run(args.url.rstrip("/"), None, args)
        return
    data_dir = Path(tempfile.mkdtemp(prefix="tempr-console-"))
    supervisor = start_supervisor(embedded_settings(data_dir))
    try:
        s = supervisor.settings
        run(f"http://{s.host}:{s.port}", s.bootstrap, args)
    finally:
        supervisor.stop()
        shutil.rmtree(data_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
