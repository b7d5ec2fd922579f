"""API keys and the audit log, as the API shows them."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

from tempr.schemas.limits import SafeText

__all__ = ["AuditEntry", "AuditPage", "KeyCreate", "KeyCreated", "KeyOut"]


class KeyCreate(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {"name": "support-bot", "scopes": ["read", "write"], "banks": ["user-123-*"]},
                {
                    "name": "nightly-export",
                    "scopes": ["read"],
                    "banks": ["*"],
                    "expires_at": "2027-01-01T00:00:00Z",
                },
            ]
        }
    )

    name: SafeText = Field(
        min_length=1, max_length=128, description="Who holds the key; names a live key once."
    )
    scopes: list[str] = Field(min_length=1, max_length=3, description="read, write, admin (independent).")
    banks: list[str] = Field(
        min_length=1, max_length=256, description="Bank ids, prefixes ending in '*' (user-123-*), or '*'."
    )
    expires_at: AwareDatetime | None = None
    rate_limit_per_min: float | None = Field(
        None,
        ge=0,
        le=1_000_000,
        description="Retain and recall calls a minute (0: none); default: the server's.",
    )


class KeyOut(BaseModel):
    id: str
    name: str
    scopes: list[str]
    banks: list[str]
    rate_limit_per_min: float | None
    created_at: datetime
    created_by: str
    expires_at: datetime | None
    revoked_at: datetime | None


class KeyCreated(KeyOut):
    key: str = Field(description="The secret key, shown this once: send it as 'Authorization: Bearer <key>'.")


class AuditEntry(BaseModel):
    id: int
    at: datetime
    actor: str = Field(
        description="The key's name ('open' in open mode, 'cli:<user>' for tempr keys, 'retention' for the sweeper)."
    )
    action: str = Field(
        description="'METHOD /route/{template}', 'keys.create' / 'keys.revoke', or 'RETENTION messages|facts'."
    )
    bank_id: str | None
    status: int | None
    detail: dict[str, Any]


class AuditPage(BaseModel):
    items: list[AuditEntry]
    limit: int
    offset: int
