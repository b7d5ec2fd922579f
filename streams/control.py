"""Control events need authority: only tempr's API signs them, the segmenter checks.

A `bank_deleted` event on the messages topic wipes a bank, and anyone who can produce to the
topic could send one. The API signs each with an HMAC-SHA256 keyed by `TEMPR_CONTROL_KEY`
(or, by default, a key generated once and kept in the data directory, which every process
of the embedded runtime shares); the segmenter dead-letters one without a valid signature.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets

from tempr.errors import UnauthorizedEvent
from tempr.schemas.events import BankDeleted
from tempr.settings import Settings

__all__ = ["control_key", "sign_tombstone", "verify_tombstone"]

_KEY_FILE = "control.key"


def control_key(settings: Settings) -> bytes:
    if settings.control_key is not None:
        return settings.control_key.get_secret_value().encode()
    path = settings.data_dir / _KEY_FILE
    if not path.exists():
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        try:  # O_EXCL: two processes starting at once agree on the first key written
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            pass
        else:
            with os.fdopen(fd, "w") as out:
                out.write(secrets.token_hex(32))
    return path.read_text().strip().encode()


def _mac(event: BankDeleted, key: bytes) -> str:
    message = f"bank_deleted\n{event.bank_id}\n{event.deleted_at.isoformat()}".encode()
    return hmac.new(key, message, hashlib.sha256).hexdigest()


def sign_tombstone(event: BankDeleted, key: bytes) -> BankDeleted:
    return event.model_copy(update={"signature": _mac(event, key)})


def verify_tombstone(event: BankDeleted, key: bytes) -> None:
    """Raises `UnauthorizedEvent` (the record is dead-lettered) unless the API signed it."""
    if event.signature is None:
        raise UnauthorizedEvent("bank_deleted without a signature: only tempr's API may emit control events")
    if not hmac.compare_digest(event.signature, _mac(event, key)):
        raise UnauthorizedEvent("bank_deleted with an invalid signature (not signed with TEMPR_CONTROL_KEY)")
