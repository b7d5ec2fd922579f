"""Control events: signed by the API's key, refused otherwise; one key per data directory."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from tempr.errors import UnauthorizedEvent
from tempr.schemas.events import BankDeleted, decode_event, encode_event
from tempr.settings import Settings
from tempr.streams.control import control_key, sign_tombstone, verify_tombstone
from tempr.streams.runtime_state import RuntimeState


def test_a_signed_tombstone_survives_the_log_and_verifies(tmp_path: Path) -> None:
    key = control_key(Settings(data_dir=tmp_path))
    signed = sign_tombstone(BankDeleted(bank_id="alice", deleted_at=datetime.now(UTC)), key)
    verify_tombstone(decode_event(encode_event(signed)), key)


def test_unsigned_forged_or_replayed_for_another_bank_is_refused(tmp_path: Path) -> None:
    key = control_key(Settings(data_dir=tmp_path))
    event = BankDeleted(bank_id="alice", deleted_at=datetime.now(UTC))
    with pytest.raises(UnauthorizedEvent, match="without a signature"):
        verify_tombstone(event, key)
    with pytest.raises(UnauthorizedEvent, match="invalid signature"):
        verify_tombstone(sign_tombstone(event, b"someone else's key"), key)
    moved = sign_tombstone(event, key).model_copy(update={"bank_id": "bob"})
    with pytest.raises(UnauthorizedEvent, match="invalid signature"):
        verify_tombstone(moved, key)


def test_the_key_is_generated_once_per_data_directory_and_settings_win(tmp_path: Path) -> None:
    first = control_key(Settings(data_dir=tmp_path))
    assert control_key(Settings(data_dir=tmp_path)) == first and len(first) == 64
    assert (tmp_path / "control.key").stat().st_mode & 0o077 == 0
    assert control_key(Settings(data_dir=tmp_path, control_key="configured")) == b"configured"


def test_production_refuses_to_start_without_a_shared_control_key(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="TEMPR_CONTROL_KEY"):
        Settings(data_dir=tmp_path, environment="production")


def test_three_restarts_within_five_minutes_is_a_crash_loop(tmp_path: Path) -> None:
    state = RuntimeState()
    for t in (0.0, 100.0):
        state.restarted("worker", now=t)
    assert state.crash_looping(now=101.0) == []
    state.restarted("worker", now=200.0)
    state.save(tmp_path)
    assert RuntimeState.load(tmp_path).crash_looping(now=201.0) == ["worker"]
    assert RuntimeState.load(tmp_path).crash_looping(now=700.0) == []
