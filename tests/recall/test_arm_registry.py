"""The arm registry: every module of recall/arms has its RecallConfig switch, and back."""

from __future__ import annotations

import asyncio
from uuid import uuid4

import pytest

from tempr.recall_api.recall.arms import ArmHit, ArmResult, OtherArms, arm_specs
from tempr.recall_api.recall.arms.base import _REGISTRY, recall_arm
from tempr.recall_api.recall.config import ARMS, RecallConfig


def test_every_arm_module_has_a_switch_in_config_order() -> None:
    assert list(arm_specs()) == list(ARMS) == ["semantic", "keyword", "graph", "temporal"]
    assert [name for name, spec in arm_specs().items() if not spec.needs_vector] == ["keyword"]


def test_an_arm_without_a_switch_is_refused_by_name() -> None:
    @recall_arm("rogue")
    async def rogue(pool: object, ctx: object) -> ArmResult:
        return ArmResult("rogue", [])

    try:
        with pytest.raises(RuntimeError, match="rogue"):
            arm_specs.__wrapped__()  # type: ignore[attr-defined]
    finally:
        del _REGISTRY["rogue"]


def test_an_arm_registered_twice_is_refused() -> None:
    async def other(pool: object, ctx: object) -> ArmResult:
        return ArmResult("semantic", [])

    with pytest.raises(ValueError, match="twice"):
        recall_arm("semantic")(other)  # type: ignore[arg-type]


def test_boosts_name_only_known_arms() -> None:
    assert RecallConfig(arm_boosts={"graph": 2.0}).arm_boost("graph") == 2.0
    with pytest.raises(ValueError, match="unknown arms"):
        RecallConfig(arm_boosts={"graf": 2.0})


async def test_an_arm_awaits_another_arms_hits_and_an_absent_one_gives_none() -> None:
    done: asyncio.Future[ArmResult] = asyncio.get_running_loop().create_future()
    others = OtherArms({"semantic": done})
    waiting = asyncio.ensure_future(others.hits("semantic"))
    await asyncio.sleep(0)
    assert not waiting.done()  # it waits for the semantic arm to finish
    hit = ArmHit(uuid4(), 0.9)
    done.set_result(ArmResult("semantic", [hit]))
    assert await waiting == [hit]
    assert others.runs("semantic") and not others.runs("temporal")
    assert await others.hits("temporal") == []
