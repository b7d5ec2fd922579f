"""Per-key token buckets for retain and recall, in process.

Why not a library (`limits`, `slowapi`): the need is one bucket per key and kind with the
time to wait for the next token (the `Retry-After`), which is a dozen lines; their storage
backends and decorators would add a dependency without adding anything here. Each API
process keeps its own buckets, so N replicas allow N times the rate: set the limit per
replica accordingly (README "Security").
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from tempr.access import Principal
from tempr.settings import Settings

__all__ = ["RateLimiter", "TokenBucket"]


@dataclass
class TokenBucket:
    """`per_min` tokens a minute, at most `per_min` saved up (a minute's worth of burst)."""

    per_min: float
    tokens: float
    updated: float

    def take(self, now: float) -> float | None:
        """Takes a token; None when granted, else the seconds until one is there."""
        rate = self.per_min / 60.0
        self.tokens = min(self.per_min, self.tokens + (now - self.updated) * rate)
        self.updated = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return None
        return (1.0 - self.tokens) / rate


class RateLimiter:
    def __init__(self, settings: Settings, clock: Callable[[], float] = time.monotonic) -> None:
        self.enabled = settings.auth_required or settings.rate_limits_in_open_mode
        self.defaults = {
            "retain": settings.rate_limit_retain_per_min,
            "recall": settings.rate_limit_recall_per_min,
        }
        self.clock = clock
        self.buckets: dict[tuple[str, str], TokenBucket] = {}

    def take(self, principal: Principal, kind: str) -> float | None:
        """None when the call may go ahead, else the seconds to wait."""
        if not self.enabled:
            return None
        per_min = principal.rate_limit_per_min
        if per_min is None:
            per_min = self.defaults[kind]
        if per_min <= 0:
            return None
        now = self.clock()
        key = (principal.key_id or principal.name, kind)
        bucket = self.buckets.get(key)
        if bucket is None or bucket.per_min != per_min:
            bucket = self.buckets[key] = TokenBucket(per_min, per_min, now)
        return bucket.take(now)
