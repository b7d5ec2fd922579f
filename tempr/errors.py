"""One error hierarchy; the API maps each class to a status code in one place.

TemprError
├── NotFound            → 404
├── InvalidRequest      → 400
├── Conflict            → 409
├── InvalidEvent        → dead letter (stream side)
│   ├── ForgottenMessage → dead letter (a message forgotten earlier, sent again)
│   └── UnauthorizedEvent → dead letter (a control event without a valid signature)
├── NotConfigured       → 501 (no LLM configured: permanent, clients do not retry)
├── UpstreamLLMError    → 502
└── UpstreamModelError  → 502 (an embedding or rerank endpoint failed)
"""

from __future__ import annotations

__all__ = [
    "Conflict",
    "ConsistencyTimeout",
    "ForgottenMessage",
    "InvalidEvent",
    "InvalidRequest",
    "NotConfigured",
    "NotFound",
    "TemprError",
    "UnauthorizedEvent",
    "UpstreamLLMError",
    "UpstreamModelError",
]


class TemprError(Exception):
    """Base class of every error tempr raises on purpose."""


class NotFound(TemprError):
    pass


class InvalidRequest(TemprError):
    pass


class Conflict(TemprError):
    """The request contradicts the current state (e.g. a dead letter already replayed)."""


class InvalidEvent(TemprError):
    """A stream record that cannot be decoded or validated."""


class ForgottenMessage(InvalidEvent):
    """A message that was forgotten came again (a resend, a redelivery): dead-lettered."""


class UnauthorizedEvent(InvalidEvent):
    """A control event (bank_deleted) that tempr's API did not sign."""


class NotConfigured(TemprError):
    """The server lacks what the request needs (reflect without an LLM). Retrying the same
    server cannot help, so it is 501 rather than a 503 that clients would retry."""


class UpstreamLLMError(TemprError):
    pass


class UpstreamModelError(TemprError):
    """A remote embedding or rerank endpoint failed or answered nonsense."""


class ConsistencyTimeout(TemprError):
    """A read-your-writes wait (`after` token) ran out of time."""
