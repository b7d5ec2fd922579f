"""API keys without I/O: minting secrets, hashing them, scopes and bank patterns.

A key reads `tmpr_<id>_<secret>`: the id finds the row, the secret (256 random bits) is
checked against an HMAC-SHA256 of it under a server-side pepper. Why an HMAC and not a slow
KDF (scrypt, argon2): slow hashing protects *low-entropy* secrets such as passwords from
guessing; a 256-bit random secret cannot be guessed however fast the hash, while a KDF would
cost tens of milliseconds of CPU on every request. The pepper (kept out of the database)
means a stolen dump of `api_keys` cannot even be checked offline.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum

__all__ = [
    "KEY_PREFIX",
    "OPEN",
    "BankPattern",
    "Principal",
    "Scope",
    "covers",
    "hash_secret",
    "mint_key",
    "parse_key",
    "pattern_matches",
    "validate_pattern",
    "verify_secret",
]

KEY_PREFIX = "tmpr"
_KEY_RE = re.compile(rf"^{KEY_PREFIX}_([0-9a-f]{{16}})_([A-Za-z0-9_-]{{43}})$")
# A bank id (see schemas.ids) optionally ending in `*`, or `*` alone.
_PATTERN_RE = re.compile(r"^(\*|[A-Za-z0-9][A-Za-z0-9._:-]{0,127}\*?)$")

BankPattern = str


class Scope(StrEnum):
    """Independent of each other: `admin` does not imply `read` or `write`."""

    READ = "read"
    WRITE = "write"
    ADMIN = "admin"


def mint_key() -> tuple[str, str, str]:
    """A new key: (id, secret, the whole key as the client sends it)."""
    key_id = secrets.token_hex(8)
    secret = secrets.token_urlsafe(32)
    return key_id, secret, f"{KEY_PREFIX}_{key_id}_{secret}"


def parse_key(token: str) -> tuple[str, str] | None:
    """(id, secret) of a well-formed key, else None."""
    match = _KEY_RE.match(token.strip())
    return (match.group(1), match.group(2)) if match else None


def hash_secret(secret: str, pepper: bytes) -> bytes:
    return hmac.new(pepper, secret.encode(), hashlib.sha256).digest()


def verify_secret(secret: str, stored: bytes, pepper: bytes) -> bool:
    return hmac.compare_digest(hash_secret(secret, pepper), stored)


def validate_pattern(pattern: str) -> str:
    if not _PATTERN_RE.match(pattern):
        raise ValueError(
            f"bank pattern {pattern!r}: a bank id, a prefix ending in '*' (user-123-*), or '*' for all"
        )
    return pattern


def pattern_matches(pattern: BankPattern, bank_id: str) -> bool:
    if pattern.endswith("*"):
        return bank_id.startswith(pattern[:-1])
    return bank_id == pattern


def covers(own: Iterable[BankPattern], wanted: BankPattern) -> bool:
    """Whether every bank `wanted` can match is matched by one of `own` (no escalation)."""
    for pattern in own:
        if pattern.endswith("*"):
            if wanted.startswith(pattern[:-1]):
                return True
        elif not wanted.endswith("*") and wanted == pattern:
            return True
    return False


@dataclass(frozen=True)
class Principal:
    """Who is calling: a key, or everyone (open mode)."""

    name: str
    scopes: frozenset[Scope]
    banks: tuple[BankPattern, ...]
    key_id: str | None = None
    expires_at: datetime | None = None
    rate_limit_per_min: float | None = None
    open: bool = field(default=False)

    def has(self, scope: Scope) -> bool:
        return scope in self.scopes

    def sees(self, bank_id: str) -> bool:
        return any(pattern_matches(p, bank_id) for p in self.banks)

    @property
    def all_banks(self) -> bool:
        return "*" in self.banks

    def visible_patterns(self) -> Sequence[BankPattern] | None:
        """For SQL filters: None when every bank is visible."""
        return None if self.all_banks else list(self.banks)


OPEN = Principal(name="open", scopes=frozenset(Scope), banks=("*",), open=True)
