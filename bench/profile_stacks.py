"""Where a worker's time goes, from py-spy's collapsed stacks (`--format raw --idle --threads`).

Each sample of a thread is put in one bucket: on the event loop, the stage whose code runs
(split into SQL client, link building, pydantic and the rest) or idle in `select`; in the
worker threads, embedding (torch), extraction (spaCy) or idle.

    python -m bench.profile_stacks worker.prof
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

__all__ = ["breakdown", "bucket"]

_STAGES = (
    "materialize_graph",
    "resolve_entities",
    "extract_facts",
    "segment_messages",
    "record_dead_letters",
)


def _stage_bucket(stack: str, stage: str) -> str:
    if "asyncpg" in stack:
        return f"loop: {stage}: SQL client"
    if "resolution/links.py" in stack:
        return f"loop: {stage}: link building"
    if "pydantic" in stack:
        return f"loop: {stage}: pydantic"
    return f"loop: {stage}: other"


def bucket(frames: list[str]) -> str | None:
    """The bucket of one sample (`frames[0]` names the thread); None for helper threads."""
    thread, stack, leaf = frames[0], ";".join(frames), frames[-1]
    if "tqdm" in thread:
        return None
    if "MainThread" in thread:
        if "_run_once" in stack and ("select" in leaf or "poll" in leaf):
            return "loop: idle"
        for stage in _STAGES:
            if f"agents/{stage}.py" in stack:
                return _stage_bucket(stack, stage)
        return "loop: faust, aiokafka, other"
    if "sentence_transformers" in stack or "torch" in stack or "onnx" in stack:
        return "threads: embedding"
    if "extract_local" in stack:
        return "threads: spaCy extraction"
    if "aiokafka" in stack or "EpollSelector" in leaf:
        return None  # the Kafka consumer's own thread
    return "threads: idle or other"


def breakdown(path: Path) -> dict[str, float]:
    """Share of the event loop's samples per bucket (thread buckets on the same scale: one
    thread busy all along is 1.0)."""
    counts: Counter[str] = Counter()
    for line in path.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        if not stack:
            continue
        name = bucket(stack.split(";"))
        if name is not None:
            counts[name] += int(n)
    loop = sum(v for k, v in counts.items() if k.startswith("loop:")) or 1
    return {k: v / loop for k, v in counts.most_common()}


def main() -> None:
    for name, share in breakdown(Path(sys.argv[1])).items():
        print(f"{share:7.1%}  {name}")


if __name__ == "__main__":
    main()
