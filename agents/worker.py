"""`tempr worker`: one Faust worker process running every stage of the pipeline."""

from __future__ import annotations

import faust

from tempr.agents import (
    consolidate_observations,
    extract_facts,
    materialize_graph,
    record_dead_letters,
    reinforce_opinions,
    resolve_entities,
    segment_messages,
)
from tempr.settings import Settings
from tempr.streams.app import Stage, create_app
from tempr.streams.context import WorkerContext

__all__ = ["STAGES", "create_worker_app", "run_worker"]

# Every stage, in flow order; those whose spec `needs_llm` subscribe only when an LLM is configured.
STAGES: tuple[Stage, ...] = (
    segment_messages,
    extract_facts,
    resolve_entities,
    materialize_graph,
    record_dead_letters,
    reinforce_opinions,
    consolidate_observations,
)


def create_worker_app(settings: Settings) -> tuple[faust.App, WorkerContext]:
    return create_app(settings, STAGES)


def run_worker(settings: Settings) -> None:
    app, _ = create_worker_app(settings)
    worker = faust.Worker(app, loglevel=settings.log_level.lower(), quiet=True)
    worker.execute_from_commandline()
