"""Recall's trace made readable: each candidate with its text, where it ranked in each arm and
after fusion, its rerank score and boosts, and which side of the cut it fell on."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tempr.schemas.recall import RecallResponse

__all__ = ["ArmView", "Bar", "Row", "TraceView", "trace_ids", "trace_view"]

SHOWN_PER_ARM = 20


@dataclass(frozen=True)
class Bar:
    label: str
    ms: float
    percent: float  # of the slowest stage


@dataclass(frozen=True)
class ArmView:
    arm: str
    count: int
    elapsed_ms: float
    note: str | None
    candidates: list[dict[str, Any]]  # rank, score, text, id, packed


@dataclass
class Row:
    """One candidate past fusion, in final order."""

    position: int
    id: str
    text: str
    arms: dict[str, int]
    fused_rank: int | None
    rrf: float | None
    rerank: float
    recency: float
    temporal: float
    proof: float
    arm_factor: float
    final: float
    fate: str  # "packed", "skipped" (did not fit, or repeats what is packed), "past the pool"


@dataclass
class TraceView:
    preset: str
    rerank_method: str
    window: dict[str, Any] | None
    query_without_names: str | None
    arms: list[ArmView]
    rows: list[Row]
    prefilter: dict[str, Any]
    packing: dict[str, Any]
    timings: list[Bar]
    total_ms: float
    why: dict[str, Row] = field(default_factory=dict)  # result id → its row


def trace_ids(trace: Mapping[str, Any]) -> set[str]:
    """Every fact id the trace names (to fetch their texts in one read)."""
    ids: set[str] = set()
    for arm in trace.get("arms", {}).values():
        ids.update(c["id"] for c in arm["candidates"])
    ids.update(c["id"] for c in trace.get("fused", {}).get("top", []))
    ids.update(b["id"] for b in trace.get("boosts", []))
    return ids


def _bars(timings: Mapping[str, float]) -> tuple[list[Bar], float]:
    stages = {k: float(v) for k, v in timings.items() if k != "total"}
    slowest = max(stages.values(), default=0.0) or 1.0
    bars = [Bar(k, v, round(100 * v / slowest, 1)) for k, v in stages.items()]
    return bars, float(timings.get("total", sum(stages.values())))


def _arm_views(arms: Mapping[str, Any], texts: Mapping[str, str], packed: set[str]) -> Iterable[ArmView]:
    for name, arm in arms.items():
        yield ArmView(
            arm=name,
            count=arm["count"],
            elapsed_ms=arm["elapsed_ms"],
            note=arm.get("note"),
            candidates=[
                {**c, "text": texts.get(c["id"], ""), "packed": c["id"] in packed}
                for c in arm["candidates"][:SHOWN_PER_ARM]
            ],
        )


def trace_view(response: RecallResponse, texts: Mapping[str, str]) -> TraceView:
    trace = response.trace or {}
    packed = {str(r.id) for r in response.results}
    fused = trace.get("fused", {}).get("top", [])
    fused_rank = {c["id"]: (i, c["rrf"]) for i, c in enumerate(fused, start=1)}
    packing = trace.get("packing", {})
    considered = packing.get("considered", 0)
    rows = []
    for i, b in enumerate(trace.get("boosts", []), start=1):
        rank, rrf = fused_rank.get(b["id"], (None, None))
        fate = "packed" if b["id"] in packed else "skipped" if i <= considered else "past the pool"
        arms: dict[str, int] = next((c["arms"] for c in fused if c["id"] == b["id"]), {})
        rows.append(
            Row(
                position=i,
                id=b["id"],
                text=texts.get(b["id"], ""),
                arms=arms,
                fused_rank=rank,
                rrf=rrf,
                rerank=b["rerank"],
                recency=b["recency"],
                temporal=b["temporal"],
                proof=b["proof"],
                arm_factor=b["arm"],
                final=b["final"],
                fate=fate,
            )
        )
    bars, total = _bars(trace.get("timings_ms", {}))
    return TraceView(
        preset=trace.get("preset", ""),
        rerank_method=trace.get("rerank", {}).get("method", ""),
        window=trace.get("temporal_window"),
        query_without_names=trace.get("query_without_names"),
        arms=list(_arm_views(trace.get("arms", {}), texts, packed)),
        rows=rows,
        prefilter=trace.get("rerank_prefilter", {}),
        packing=packing,
        timings=bars,
        total_ms=total,
        why={r.id: r for r in rows if r.fate == "packed"},
    )
