"""The retrieval arms: one module per arm, found by the registry.

A new arm is one module here, with an async ``(pool, ctx) -> ArmResult`` function decorated
``@recall_arm("name")`` (its SQL in a ``store`` query module), plus one switch in
``RecallConfig`` (``name: bool = arm_switch()``). It then runs in every preset and request that
leaves it on, and fusion, rerank and packing take its ranking with no change.
"""

from __future__ import annotations

import importlib
import pkgutil
import time
from collections.abc import Mapping
from functools import cache

import asyncpg

from tempr.recall_api.recall.arms.base import (
    ArmContext,
    ArmHit,
    ArmResult,
    ArmSpec,
    OtherArms,
    recall_arm,
    registered_specs,
)
from tempr.recall_api.recall.config import ARMS, RecallConfig

__all__ = [
    "ArmContext",
    "ArmHit",
    "ArmResult",
    "ArmSpec",
    "OtherArms",
    "arm_specs",
    "enabled_specs",
    "recall_arm",
    "run_arm",
]


@cache
def arm_specs() -> Mapping[str, ArmSpec]:
    """Every arm, in `RecallConfig`'s order, once this package's modules are imported.

    Imported on first use rather than at package import, so an arm module may import what
    imports this package (the graph arm's retrievers do)."""
    for module in pkgutil.iter_modules(__path__):
        if module.name != "base":
            importlib.import_module(f"{__name__}.{module.name}")
    found = registered_specs()
    if set(found) != set(ARMS):
        raise RuntimeError(
            f"recall arms {sorted(found)} and RecallConfig's arm switches {sorted(ARMS)} differ: "
            "each arm needs both a registered module and a switch"
        )
    return {name: found[name] for name in ARMS}


def enabled_specs(cfg: RecallConfig) -> list[ArmSpec]:
    specs = arm_specs()
    return [specs[name] for name in cfg.enabled_arms()]


async def run_arm(pool: asyncpg.Pool, arm: str, ctx: ArmContext) -> ArmResult:
    """Run one arm and time it (waiting for other arms' hits included: part of its cost)."""
    started = time.perf_counter()
    result = await arm_specs()[arm].run(pool, ctx)
    result.elapsed_ms = round((time.perf_counter() - started) * 1000, 2)
    return result
