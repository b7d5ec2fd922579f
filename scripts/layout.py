"""Lay out the installed `tempr` package as symlinks, for the tools that read folders, not pip.

The design card's folders (`agents/`, `store/`, ...) install as `tempr.agents`, `tempr.store`
(the `package-dir` mapping in pyproject.toml). mypy and import-linter find modules by walking
directories and cannot follow that mapping, so `python scripts/layout.py` builds
`build/layout/tempr/` with each mapped folder linked in place; edits show through at once.
"""

from __future__ import annotations

import shutil
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = ROOT / "build" / "layout"


def build(dest: Path = DEFAULT) -> Path:
    mapping: dict[str, str] = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-dir"
    ]
    if dest.exists():
        shutil.rmtree(dest)
    for package, folder in sorted(mapping.items()):
        target = dest.joinpath(*package.split("."))
        if package == "tempr":  # the root: a real folder, so the mapped ones can sit beside its files
            target.mkdir(parents=True)
            for entry in (ROOT / folder).iterdir():
                if entry.name != "__pycache__":
                    (target / entry.name).symlink_to(entry)
        else:
            target.symlink_to(ROOT / folder, target_is_directory=True)
    return dest


if __name__ == "__main__":
    print(build(Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT))
