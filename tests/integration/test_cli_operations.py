"""`tempr replay` and `tempr dlq` against the live API, through typer's runner and as a process."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid

import httpx
import pytest
from typer.testing import CliRunner

from tempr.cli import app as cli_app
from tempr.streams.runtime import Supervisor
from tests.conftest import wait_until
from tests.integration.test_dead_letter_replay import letters_with, produce_bad_record, wait_for_letters

pytestmark = pytest.mark.integration

WIDE = 250
WIDE_ENV = {"COLUMNS": str(WIDE)}  # rich measures the terminal from it


def test_replay_command_rebuilds_and_reports_what_changed(api: httpx.Client, bank: str) -> None:
    items = [
        {"content": "I started learning the cello in March.", "speaker": "Lena", "conversation_id": "c"},
        {"content": "How are the lessons going?", "speaker": "Max", "conversation_id": "c"},
    ]
    assert api.post(f"/v1/banks/{bank}/memories", json={"items": items}).status_code == 202
    wait_until(lambda: api.get(f"/v1/banks/{bank}/stats").json()["pending_events"] == 0, timeout=60)
    facts = api.get(f"/v1/banks/{bank}/stats").json()["facts"]

    out = CliRunner().invoke(
        cli_app, ["replay", "--bank", bank, "--url", str(api.base_url)], terminal_width=WIDE
    )
    assert out.exit_code == 0, out.output
    assert f"replayed 2 messages of {bank}: removed {facts} facts" in out.output
    assert "what changed" in out.output and "facts kept (same id)" in out.output
    assert "the rebuilt facts are the same as before" in out.output
    assert api.get(f"/v1/banks/{bank}/stats").json()["facts"] == facts


def test_replay_command_refuses_an_unknown_bank_and_a_bad_time(api: httpx.Client, bank: str) -> None:
    url = str(api.base_url)
    unknown = CliRunner().invoke(cli_app, ["replay", "--bank", bank, "--url", url])
    assert unknown.exit_code == 2 and "404" in unknown.output and bank in unknown.output
    bad = CliRunner().invoke(cli_app, ["replay", "--bank", bank, "--from", "yesterday", "--url", url])
    assert bad.exit_code == 2 and "ISO 8601" in bad.output


def test_dlq_list_and_replay_by_id(api: httpx.Client, stack: Supervisor) -> None:
    runner, url = CliRunner(), str(api.base_url)
    marker = uuid.uuid4().hex
    produce_bad_record(stack.settings.bootstrap, marker)
    [letter] = wait_for_letters(api, marker, 1)

    listed = runner.invoke(
        cli_app, ["dlq", "list", "--pending", "--url", url], terminal_width=WIDE, env=WIDE_ENV
    )
    assert listed.exit_code == 0, listed.output
    assert letter["id"] in listed.output and "segment_messages" in listed.output

    replayed = runner.invoke(
        cli_app, ["dlq", "replay", letter["id"], "--url", url], terminal_width=WIDE, env=WIDE_ENV
    )
    assert replayed.exit_code == 0, replayed.output
    assert "replayed" in replayed.output and "tempr.messages.v1" in replayed.output
    assert letters_with(api, marker)[0]["replayed_at"] is not None

    again = runner.invoke(
        cli_app, ["dlq", "replay", letter["id"], "--url", url], terminal_width=WIDE, env=WIDE_ENV
    )
    assert again.exit_code == 1 and "refused (409)" in again.output
    forced = runner.invoke(
        cli_app, ["dlq", "replay", letter["id"], "--force", "--url", url], terminal_width=WIDE
    )
    assert forced.exit_code == 0 and "replayed (again)" in forced.output

    neither = runner.invoke(cli_app, ["dlq", "replay", "--url", url])
    assert neither.exit_code == 2 and "--all" in neither.output


def test_dlq_replay_all_as_a_process(api: httpx.Client, stack: Supervisor) -> None:
    marker = uuid.uuid4().hex
    produce_bad_record(stack.settings.bootstrap, marker)
    [letter] = wait_for_letters(api, marker, 1)
    env = {**os.environ, "TEMPR_URL": str(api.base_url), "COLUMNS": str(WIDE)}
    proc = subprocess.run(
        [sys.executable, "-m", "tempr.cli", "dlq", "replay", "--all"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert letter["id"] in proc.stdout
    assert letters_with(api, marker)[0]["replayed_at"] is not None


def test_operations_report_an_unreachable_server() -> None:
    env = {**os.environ, "TEMPR_URL": "http://127.0.0.1:9"}
    proc = subprocess.run(
        [sys.executable, "-m", "tempr.cli", "replay", "--bank", "b"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2 and "cannot reach tempr" in proc.stderr
    listed = CliRunner().invoke(cli_app, ["dlq", "list"], env={"TEMPR_URL": "http://127.0.0.1:9"})
    assert listed.exit_code == 2 and "cannot reach tempr" in listed.output
