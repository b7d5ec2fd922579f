"""Prometheus metrics: requests counted by route template and status, latency observed,
pipeline gauges filled at scrape time."""

from __future__ import annotations

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

pytestmark = pytest.mark.integration

RECALL = "/v1/banks/{bank_id}/recall"


def _samples(api: httpx.Client) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    response = api.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(response.text)
        for s in family.samples
    }


def _value(samples: dict, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def test_requests_are_counted_by_route_template(api: httpx.Client, bank: str) -> None:
    before = _samples(api)
    for i in range(3):
        assert api.post(f"/v1/banks/{bank}-{i}/recall", json={"query": "anything"}).status_code == 200
    assert api.post(f"/v1/banks/{bank}/recall", json={}).status_code == 422
    assert api.get("/no/such/path").status_code == 404
    after = _samples(api)

    ok = dict(method="POST", route=RECALL, status="200")
    assert (
        _value(after, "tempr_http_requests_total", **ok) - _value(before, "tempr_http_requests_total", **ok)
        == 3
    )
    bad = dict(method="POST", route=RECALL, status="422")
    assert (
        _value(after, "tempr_http_requests_total", **bad) - _value(before, "tempr_http_requests_total", **bad)
        == 1
    )
    timed = dict(method="POST", route=RECALL)
    count = "tempr_http_request_duration_seconds_count"
    assert _value(after, count, **timed) - _value(before, count, **timed) == 4
    assert _value(after, "tempr_http_request_duration_seconds_sum", **timed) > 0
    # Raw paths never become labels (one series per route, however many banks).
    assert not any(bank in v for (_, labels) in after for _, v in labels)
    assert not any(dict(labels).get("route") == "/no/such/path" for (_, labels) in after)


def test_pipeline_gauges_are_read_at_scrape_time(api: httpx.Client, bank: str) -> None:
    api.put(f"/v1/banks/{bank}", json={})
    samples = _samples(api)
    banks = api.get("/v1/banks", params={"limit": 1}).json()["total"]
    assert _value(samples, "tempr_banks") == banks
    assert _value(samples, "tempr_pipeline_pending_messages") >= 0
    assert ("tempr_dead_letters", frozenset()) in samples
