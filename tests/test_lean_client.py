"""The lean client: the base distribution, built as a wheel and installed into a fresh venv,
brings httpx + pydantic and nothing of the server, and adds no top-level name but `tempr`.

Slow-ish (a wheel build and a pip install, ~30 s from pip's cache) but it is the only proof
that an agent can `pip install tempr` beside other SDKs without pulling torch or clobbering
their modules.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tomllib
from email.parser import Parser
from pathlib import Path, PurePosixPath
from zipfile import ZipFile

import pytest

ROOT = Path(__file__).resolve().parents[1]
SERVER_DISTRIBUTIONS = {"torch", "faust-streaming", "asyncpg", "sentence-transformers", "fastapi", "pgserver"}


def _run(*cmd: str | Path, **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=300, **kwargs)  # type: ignore[call-overload]


def _venv_with(work: Path, requirement: str) -> Path:
    venv = work / "venv"
    made = _run(sys.executable, "-m", "venv", "--without-pip", venv)
    assert made.returncode == 0, made.stderr
    # The dev venv's pip installs into the fresh venv (no pip bootstrap: faster, same cache).
    installed = _run(
        sys.executable, "-m", "pip", "--python", venv / "bin" / "python", "install", "-q", requirement
    )
    assert installed.returncode == 0, installed.stderr
    return venv


@pytest.fixture(scope="module")
def lean(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the wheel, the venv it was installed into, alone)."""
    work = tmp_path_factory.mktemp("lean")
    src = work / "src"
    src.mkdir()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    for folder in set(project["tool"]["setuptools"]["package-dir"].values()):
        shutil.copytree(ROOT / folder, src / folder, ignore=shutil.ignore_patterns("__pycache__"))
    built = _run(
        sys.executable,
        "-m",
        "pip",
        "wheel",
        "--no-deps",
        "--no-build-isolation",
        "-q",
        "-w",
        work / "dist",
        src,
    )
    assert built.returncode == 0, built.stderr
    (wheel,) = (work / "dist").glob("tempr-*.whl")
    return wheel, _venv_with(work, str(wheel))


@pytest.fixture(scope="module")
def lean_cli(lean: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv with the wheel and its `cli` extra: the command line without the server."""
    wheel, _ = lean
    return _venv_with(tmp_path_factory.mktemp("lean-cli"), f"{wheel}[cli]")


def _installed(venv: Path) -> set[str]:
    listed = _run(
        sys.executable, "-m", "pip", "--python", venv / "bin" / "python", "list", "--format", "json"
    )
    assert listed.returncode == 0, listed.stderr
    return {d["name"].lower() for d in json.loads(listed.stdout)}


def test_base_distribution_requires_only_httpx_and_pydantic(lean: tuple[Path, Path]) -> None:
    wheel, _ = lean
    with ZipFile(wheel) as zf:
        (meta,) = [n for n in zf.namelist() if n.endswith(".dist-info/METADATA")]
        requires = Parser().parsestr(zf.read(meta).decode()).get_all("Requires-Dist") or []
    base = sorted(
        r.split(">")[0].split("<")[0].split("=")[0].strip() for r in requires if "extra ==" not in r
    )
    assert base == ["httpx", "pydantic"]


def test_client_imports_without_the_server(lean: tuple[Path, Path]) -> None:
    _, venv = lean
    code = (
        "from tempr.client import AsyncTemprClient, TemprClient\n"
        "from tempr.schemas.recall import RecallRequest\n"
        "RecallRequest(query='where?')\n"
        "with TemprClient('http://127.0.0.1:9') as c: pass\n"
        "import sys; print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "{'torch','faust','asyncpg','fastapi','pydantic_settings','numpy'}))\n"
    )
    ran = _run(venv / "bin" / "python", "-c", code, cwd=venv)  # not the source tree's tempr/
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == "[]"
    assert not _installed(venv) & SERVER_DISTRIBUTIONS


def test_only_the_tempr_top_level_name_is_added(lean: tuple[Path, Path]) -> None:
    wheel, venv = lean
    with ZipFile(wheel) as zf:
        tops = {PurePosixPath(n).parts[0] for n in zf.namelist()}
    assert {t for t in tops if not t.endswith((".dist-info", ".data"))} == {"tempr"}
    (record,) = venv.glob("lib/python*/site-packages/tempr-*.dist-info/RECORD")
    placed = {PurePosixPath(line.split(",")[0]).parts[0] for line in record.read_text().splitlines()}
    assert placed - {".."} == {"tempr", record.parent.name}  # ".." is the `tempr` script in bin/


def test_command_line_says_what_to_install(lean: tuple[Path, Path]) -> None:
    _, venv = lean
    ran = _run(venv / "bin" / "tempr", "--help", cwd=venv)
    assert ran.returncode != 0
    assert "pip install 'tempr[cli]'" in ran.stderr


def test_cli_extra_runs_client_commands_and_names_the_server_extra(lean_cli: Path) -> None:
    assert not _installed(lean_cli) & SERVER_DISTRIBUTIONS
    for command in ("recall", "mcp", "dlq"):
        helped = _run(lean_cli / "bin" / "tempr", command, "--help", cwd=lean_cli)
        assert helped.returncode == 0, helped.stderr
    refused = _run(lean_cli / "bin" / "tempr", "up", cwd=lean_cli)
    assert refused.returncode == 2
    said = " ".join((refused.stdout + refused.stderr).split())
    assert "pip install 'tempr[server]'" in said and "torch" in said
    # A client command reaches for the server it names, and says so when none answers.
    unreachable = _run(
        lean_cli / "bin" / "tempr", "recall", "--bank", "b", "q", "--url", "http://127.0.0.1:9", cwd=lean_cli
    )
    assert unreachable.returncode == 2
