"""`tempr retain` / `tempr recall` against the live API, through typer's runner and as a process."""

from __future__ import annotations

import os
import subprocess
import sys

import httpx
import pytest
from typer.testing import CliRunner

from tempr.cli import app as cli_app

pytestmark = pytest.mark.integration


def test_retain_then_recall_with_trace(api: httpx.Client, bank: str) -> None:
    runner = CliRunner()
    url = str(api.base_url)
    out = runner.invoke(
        cli_app,
        [
            "retain",
            "Priya adopted a beagle named Biscuit.",
            "--bank",
            bank,
            "--speaker",
            "Priya",
            "--url",
            url,
        ],
    )
    assert out.exit_code == 0, out.output
    token = out.output.split("token")[-1].strip()
    assert token.startswith("j")
    found = runner.invoke(
        cli_app,
        ["recall", "What dog did Priya adopt?", "--bank", bank, "--after", token, "--trace", "--url", url],
        terminal_width=200,
    )
    assert found.exit_code == 0, found.output
    assert "Biscuit" in found.output and "semantic" in found.output and "timings (ms)" in found.output


def test_recall_reports_a_refusal_and_an_unreachable_server(api: httpx.Client, bank: str) -> None:
    refused = CliRunner().invoke(cli_app, ["recall", "x", "--bank", "bad bank", "--url", str(api.base_url)])
    assert refused.exit_code == 2 and "422" in refused.output
    env = {**os.environ, "TEMPR_URL": "http://127.0.0.1:9"}
    proc = subprocess.run(
        [sys.executable, "-m", "tempr.cli", "recall", "x", "--bank", bank],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2 and "cannot reach tempr" in proc.stderr
