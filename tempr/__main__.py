"""`tempr` and `python -m tempr`: the command line, or what to install for it.

The base distribution is the lean client; the command line needs the `cli` extra (and its
server commands the `server` extra, which they name themselves).
"""

from __future__ import annotations

import sys

__all__ = ["main"]

CLI_MODULES = frozenset({"typer", "rich", "click"})


def main() -> None:
    try:
        from tempr.cli import main as cli
    except ModuleNotFoundError as exc:
        if exc.name not in CLI_MODULES:
            raise
        sys.exit(
            f"tempr: the command line is not installed here (missing: {exc.name}). "
            "Install it with: pip install 'tempr[cli]' (client commands) or 'tempr[server]' (everything)"
        )
    cli()


if __name__ == "__main__":
    main()
