"""Stages whose spec needs an LLM subscribe only when one is configured."""

from pathlib import Path

import pytest

from tempr.agents.worker import STAGES, create_worker_app
from tempr.settings import Settings

LLM_STAGES = {s.SPEC.name for s in STAGES if s.SPEC.needs_llm}


def _agent_names(settings: Settings) -> set[str]:
    app, _ = create_worker_app(settings)
    return {agent.name.rsplit(".", 1)[-1] for agent in app.agents.values()}


def test_the_llm_stages_are_the_ones_that_say_so() -> None:
    assert {"consolidate_observations", "reinforce_opinions"} == LLM_STAGES


@pytest.mark.parametrize("llm", [False, True])
def test_llm_stages_subscribe_only_with_an_llm(tmp_path: Path, llm: bool) -> None:
    extra = {"llm_base_url": "http://127.0.0.1:9/v1", "llm_model": "m"} if llm else {}
    settings = Settings(data_dir=tmp_path, **extra)
    names = _agent_names(settings)
    every = {s.SPEC.name for s in STAGES}
    assert names >= every - LLM_STAGES
    assert (names & LLM_STAGES) == (LLM_STAGES if llm else set())
