"""Prometheus metrics of the API: requests by route template, latency, and pipeline gauges.

Each app gets its own registry, so several apps in one process (tests) never collide. Routes
are labelled by their template (`/v1/banks/{bank_id}/recall`), never by the raw path, to keep
the label set bounded however many banks there are.
"""

from __future__ import annotations

import time

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["ApiMetrics"]

# Recall is tens of milliseconds, reflect seconds (an LLM call): buckets cover both.
_LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


class ApiMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "tempr_http_requests",
            "HTTP requests answered, by method, route template and status code.",
            ["method", "route", "status"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "tempr_http_request_duration_seconds",
            "Time to answer an HTTP request, by method and route template.",
            ["method", "route"],
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.pending_messages = Gauge(
            "tempr_pipeline_pending_messages",
            "Messages accepted (journaled) but not materialized yet, all banks.",
            registry=self.registry,
        )
        self.dead_letters = Gauge(
            "tempr_dead_letters", "Dead letters not replayed yet.", registry=self.registry
        )
        self.banks = Gauge("tempr_banks", "Banks with a profile.", registry=self.registry)
        self.group_lag = Gauge(
            "tempr_consumer_group_lag",
            "Records the workers' consumer group has not committed yet, by topic (Apache Kafka only).",
            ["topic"],
            registry=self.registry,
        )
        self.healthy = Gauge("tempr_healthy", "1 when /health is ok, else 0.", registry=self.registry)
        self.database_up = Gauge(
            "tempr_database_up", "Postgres reachable (1) or not.", registry=self.registry
        )
        self.broker_up = Gauge("tempr_broker_up", "The broker reachable (1) or not.", registry=self.registry)
        self.oldest_pending = Gauge(
            "tempr_pipeline_oldest_pending_seconds",
            "Age of the oldest message accepted and not materialized yet (0 when none).",
            registry=self.registry,
        )
        self.stage_heartbeat_age = Gauge(
            "tempr_stage_heartbeat_age_seconds",
            "Seconds since the stage's freshest heartbeat.",
            ["stage"],
            registry=self.registry,
        )
        self.stage_busy = Gauge(
            "tempr_stage_busy_seconds",
            "Seconds the stage has spent on its current batch (0 when idle).",
            ["stage"],
            registry=self.registry,
        )
        self.stage_failed = Gauge(
            "tempr_stage_dead_lettered_records",
            "Records the stage dead-lettered since its worker started.",
            ["stage"],
            registry=self.registry,
        )
        self.restarts = Gauge(
            "tempr_child_restarts",
            "Restarts of each child of `tempr up` (worker, api, postgres).",
            ["child"],
            registry=self.registry,
        )

    def asgi_middleware(self, app: ASGIApp) -> ASGIApp:
        """Pure ASGI (not BaseHTTPMiddleware): streamed answers such as MCP's pass untouched."""

        async def measured(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] != "http":
                await app(scope, receive, send)
                return
            started = time.perf_counter()
            status = 500

            async def send_and_note(message: Message) -> None:
                nonlocal status
                if message["type"] == "http.response.start":
                    status = message["status"]
                await send(message)

            try:
                await app(scope, receive, send_and_note)
            finally:
                route = getattr(scope.get("route"), "path", None)  # set by the router on a match
                if route is not None:
                    self.requests.labels(scope["method"], route, str(status)).inc()
                    self.latency.labels(scope["method"], route).observe(time.perf_counter() - started)

        return measured
