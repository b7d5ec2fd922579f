"""`tempr banks export|import|set --retention-days`, `tempr memory|correct|forget` against the live API.

The export goes to stdout as a process does it (`tempr banks export B > f.jsonl`)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from tempr.cli import app as cli_app
from tests.integration.test_bank_replay import HIKE, conversation, facts, retain, settled

pytestmark = pytest.mark.integration


def test_export_import_correct_forget_and_retention_from_the_command_line(
    api: httpx.Client, bank: str, tmp_path: Path
) -> None:
    runner = CliRunner()
    url = ["--url", str(api.base_url)]

    def run(*args: str) -> str:
        out = runner.invoke(cli_app, [*args, *url], terminal_width=200)
        assert out.exit_code == 0, out.output
        return out.output

    retain(api, bank, conversation("hike", HIKE))
    settled(api, bank)
    dump = tmp_path / "bank.jsonl"
    with dump.open("wb") as out:
        subprocess.run(
            [sys.executable, "-m", "tempr.cli", "banks", "export", bank, *url],
            stdout=out,
            check=True,
            timeout=120,
        )
    header = json.loads(dump.read_text().splitlines()[0])
    assert header["record"] == "header" and header["bank_id"] == bank
    copy = f"{bank}-copy"
    imported = run("banks", "import", str(dump), "--as", copy)
    assert f"bank {copy} (from {bank}" in imported and "fact" in imported
    assert len(facts(api, copy)) == len(facts(api, bank))

    target = next(iter(facts(api, bank)))
    corrected = run("correct", target, "--bank", bank, "--text", "Ines hiked the Rota Vicentina alone.")
    assert "accepted" in corrected and "token j" in corrected
    token = corrected.split("token ")[1].split()[0]
    assert api.post(f"/v1/banks/{bank}/recall", json={"query": "hike", "after": token}).status_code == 200
    shown = run("memory", target, "--bank", bank)
    assert "Ines hiked the Rota Vicentina alone." in shown and "was (" in shown

    forgot = run("forget", "--bank", bank, "--message", "hike-2", "--yes")
    assert "forgot message hike-2" in forgot
    assert not any("hike-2" in f["source_message_ids"] for f in facts(api, bank).values())
    both = runner.invoke(
        cli_app, ["forget", "--bank", bank, "--memory", target, "--message", "x", "--yes", *url]
    )
    assert both.exit_code == 2 and "exactly one" in both.output

    assert "updated" in run("banks", "set", bank, "--retention-days", "90", "--message-retention-days", "30")
    config = api.get(f"/v1/banks/{bank}").json()["config"]
    assert config["message_retention_days"] == 30 and config["fact_retention_days"] == 90
    run("banks", "set", bank, "--retention-days", "0")
    config = api.get(f"/v1/banks/{bank}").json()["config"]
    assert config.get("message_retention_days") is None and config.get("fact_retention_days") is None
