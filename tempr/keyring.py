"""Key operations shared by the API, `tempr keys` and `tempr up`: the pepper, creating,
authenticating and revoking keys, and the bootstrap admin key of a first start with keys."""

from __future__ import annotations

import ipaddress
import os
import secrets
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import asyncpg

from tempr.access import Principal, Scope, hash_secret, mint_key, parse_key, validate_pattern, verify_secret
from tempr.errors import Conflict, InvalidRequest
from tempr.settings import Settings
from tempr.store import audit, keys

__all__ = [
    "BOOTSTRAP_NAME",
    "OpenExposure",
    "authenticate",
    "bootstrap_admin_key",
    "check_exposure",
    "create_key",
    "is_loopback",
    "load_pepper",
    "to_principal",
]

BOOTSTRAP_NAME = "bootstrap-admin"
_BOOTSTRAP_LOCK = 0x7E3B_0018


class OpenExposure(RuntimeError):
    """Open mode (no keys) asked for on an address other machines can reach."""


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_exposure(settings: Settings) -> None:
    """Open mode serves only loopback, unless `insecure` says otherwise on purpose."""
    if settings.auth_required or settings.insecure or is_loopback(settings.host):
        return
    raise OpenExposure(
        f"refusing to serve {settings.host} without API keys: anyone who reaches it could read and "
        "write every bank. Run with keys (tempr up --auth, TEMPR_AUTH=keys), bind a loopback "
        "address, or pass --insecure (TEMPR_INSECURE=true) if something in front checks access."
    )


def load_pepper(settings: Settings) -> bytes:
    """TEMPR_AUTH_PEPPER, else a random pepper kept in data_dir/auth_pepper (made once, 0600)."""
    if settings.auth_pepper is not None:
        return settings.auth_pepper.get_secret_value().encode()
    path: Path = settings.data_dir / "auth_pepper"
    try:
        return path.read_bytes().strip()
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # another process made it first
        return path.read_bytes().strip()
    pepper = secrets.token_hex(32).encode()
    with os.fdopen(fd, "wb") as f:
        f.write(pepper)
    return pepper


def to_principal(row: asyncpg.Record) -> Principal:
    return Principal(
        name=row["name"],
        scopes=frozenset(Scope(s) for s in row["scopes"]),
        banks=tuple(row["banks"]),
        key_id=row["id"],
        expires_at=row["expires_at"],
        rate_limit_per_min=row["rate_limit_per_min"],
    )


async def authenticate(pool: asyncpg.Pool, token: str, pepper: bytes) -> Principal | None:
    """The key's principal; None for a malformed, unknown, wrong, revoked or expired key."""
    parsed = parse_key(token)
    if parsed is None:
        return None
    key_id, secret = parsed
    row = await keys.find_key(pool, key_id)
    if row is None or not verify_secret(secret, row["secret_hash"], pepper):
        return None
    if row["revoked_at"] is not None:
        return None
    if row["expires_at"] is not None and row["expires_at"] <= datetime.now(UTC):
        return None
    return to_principal(row)


async def create_key(
    conn: asyncpg.Connection | asyncpg.Pool,
    pepper: bytes,
    *,
    name: str,
    scopes: Sequence[str],
    banks: Sequence[str],
    created_by: str,
    expires_at: datetime | None = None,
    rate_limit_per_min: float | None = None,
) -> tuple[asyncpg.Record, str]:
    """(row, the whole key): the key is never stored and cannot be shown again."""
    if not name.strip():
        raise InvalidRequest("name: must not be empty")
    try:
        scope_values = sorted({Scope(s.strip()).value for s in scopes})
    except ValueError:
        raise InvalidRequest(f"scopes: each one of {[s.value for s in Scope]}, got {list(scopes)}") from None
    if not scope_values:
        raise InvalidRequest("scopes: at least one of read, write, admin")
    try:
        patterns = sorted({validate_pattern(b.strip()) for b in banks})
    except ValueError as exc:
        raise InvalidRequest(f"banks: {exc}") from None
    if not patterns:
        raise InvalidRequest("banks: at least one bank pattern ('*' for all)")
    if expires_at is not None and expires_at <= datetime.now(UTC):
        raise InvalidRequest("expires_at: must be in the future")
    key_id, secret, whole = mint_key()
    try:
        row = await keys.insert_key(
            conn,
            key_id=key_id,
            name=name.strip(),
            secret_hash=hash_secret(secret, pepper),
            scopes=scope_values,
            banks=patterns,
            created_by=created_by,
            expires_at=expires_at,
            rate_limit_per_min=rate_limit_per_min,
        )
    except asyncpg.UniqueViolationError:
        raise Conflict(f"name: a live key is already named {name!r} (revoke it first)") from None
    return row, whole


async def bootstrap_admin_key(pool: asyncpg.Pool, pepper: bytes) -> str | None:
    """On the first start with keys (no key ever made), one admin key for every bank; else None.

    Serialized by an advisory lock, so API replicas starting together make one key."""
    async with pool.acquire() as conn, conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock($1)", _BOOTSTRAP_LOCK)
        if await keys.count_keys(conn):
            return None
        row, whole = await create_key(
            conn,
            pepper,
            name=BOOTSTRAP_NAME,
            scopes=[s.value for s in Scope],
            banks=["*"],
            created_by="bootstrap",
        )
        await audit.record_audit(
            conn,
            actor="bootstrap",
            action="keys.create",
            bank_id=None,
            status=None,
            detail={"key": row["id"]},
        )
    return whole
