"""`tempr worker`: one Faust worker process running every agent."""

from __future__ import annotations

import faust

from tempr.settings import Settings
from tempr.streams.app import create_app

__all__ = ["run_worker"]


def run_worker(settings: Settings) -> None:
    app, _ = create_app(settings)
    worker = faust.Worker(app, loglevel=settings.log_level.lower(), quiet=True)
    worker.execute_from_commandline()
