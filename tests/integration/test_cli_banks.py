"""`tempr banks ...` and `tempr reflect` against the live API, through typer's runner and as a process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from tempr.cli import app as cli_app

pytestmark = pytest.mark.integration


def test_banks_create_set_list_show_delete(api: httpx.Client, bank: str) -> None:
    runner = CliRunner()
    url = ["--url", str(api.base_url)]

    def run(*args: str) -> str:
        out = runner.invoke(cli_app, [*args, *url], terminal_width=200)
        assert out.exit_code == 0, out.output
        return out.output

    assert "saved" in run(
        "banks", "create", bank, "--name", "Ada", "--background", "I navigate.", "--skepticism", "5"
    )
    assert "updated" in run("banks", "set", bank, "--empathy", "1", "--bias-strength", "0.8")
    listed = run("banks", "list")
    assert bank in listed and "5/3/1, 0.80" in listed
    shown = run("banks", "show", bank)
    assert "Ada" in shown and "I navigate." in shown and "skepticism 5" in shown and "empathy 1" in shown
    as_json = json.loads(run("banks", "show", bank, "--json"))
    assert as_json["bank"]["disposition"]["bias_strength"] == 0.8 and as_json["stats"]["facts"] == 0

    nothing = runner.invoke(cli_app, ["banks", "set", bank, *url])
    assert nothing.exit_code == 2 and "nothing to change" in nothing.output
    out_of_range = runner.invoke(cli_app, ["banks", "set", bank, "--empathy", "7", *url])
    assert out_of_range.exit_code == 2

    kept = runner.invoke(cli_app, ["banks", "delete", bank, *url], input="n\n")
    assert kept.exit_code == 1 and json.loads(run("banks", "list", "--json", "--limit", "1000"))["total"] >= 1
    assert "deleted bank" in run("banks", "delete", bank, "--yes")
    gone = runner.invoke(cli_app, ["banks", "show", bank, *url])
    assert gone.exit_code == 2 and "404" in gone.output


def test_reflect_reports_a_server_without_an_llm(api: httpx.Client, bank: str, tmp_path: Path) -> None:
    schema = tmp_path / "answer.json"
    schema.write_text(json.dumps({"type": "object", "properties": {"answer": {"type": "string"}}}))
    env = {**os.environ, "TEMPR_URL": str(api.base_url)}
    subprocess.run(
        [sys.executable, "-m", "tempr.cli", "banks", "create", bank], env=env, check=True, capture_output=True
    )
    proc = subprocess.run(
        [sys.executable, "-m", "tempr.cli", "reflect", "Who am I?", "--bank", bank, "--schema", str(schema)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2 and "501" in proc.stderr and "no LLM is configured" in proc.stderr


def test_reflect_rejects_a_schema_that_is_not_json(api: httpx.Client, bank: str, tmp_path: Path) -> None:
    bad = tmp_path / "schema.json"
    bad.write_text("{not json")
    out = CliRunner().invoke(
        cli_app, ["reflect", "x", "--bank", bank, "--schema", str(bad), "--url", str(api.base_url)]
    )
    assert out.exit_code == 2 and "--schema" in out.output
