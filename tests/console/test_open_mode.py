"""Open mode (no keys, loopback only): the console needs no login and says it is open."""

from __future__ import annotations

import httpx
import pytest

pytestmark = pytest.mark.integration


def test_open_mode_needs_no_login_but_still_a_csrf_token(api: httpx.Client) -> None:
    assert api.get("/console", follow_redirects=False).headers["location"] == "/console/banks"
    page = api.get("/console/banks")
    assert page.status_code == 200 and "open mode" in page.text
    assert "Log out" not in page.text
    login = api.get("/console/login")
    assert "open mode" in login.text
    # A cross-site form cannot change anything without the page's token.
    r = api.post("/console/banks", data={"bank_id": "console-open-x"})
    assert r.status_code == 403 and "CSRF" in r.text
    assert api.get("/v1/banks/console-open-x").status_code == 404
    # Another site's page is refused outright on a loopback bind (its Origin).
    evil = api.post("/console/banks", data={"bank_id": "x"}, headers={"Origin": "http://evil.example"})
    assert evil.status_code == 403


def test_bad_input_and_missing_things_are_pages_that_say_so(api: httpx.Client) -> None:
    bad = api.get("/console/banks/console-open-y/memories", params={"type": "bogus", "start": "x"})
    assert bad.status_code == 422 and "text/html" in bad.headers["content-type"]
    assert "type:" in bad.text
    dates = api.get("/console/banks/console-open-y/memories", params={"start": "not-a-date"})
    assert dates.status_code == 422 and "from: not a date" in dates.text
    missing = api.get("/console/banks/console-no-such-bank")
    assert missing.status_code == 404 and "does not exist" in missing.text
    assert api.get("/console/static/../pyproject.toml").status_code == 404
    assert api.get("/console/static/htmx.min.js").headers["content-type"].startswith("text/javascript")
