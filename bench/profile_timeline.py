"""Is the worker's model busy all the time? A py-spy timeline (`--format speedscope --idle
--threads`) of the ingest worker, read sample by sample.

Each tick, every thread is in one state: the embedding thread runs the model (ONNX Runtime or
torch) or not, a thread runs spaCy's extraction or not, the event loop runs a stage or waits in
`select`. Shares are of the recording's wall time; `head_s` is how long the recording ran before
the model's first sample, `tail_s` how long after its last (the resolver and the materializer
finishing the last chunks). A sample is taken whether the thread is on a core or waiting for
one, so on a loaded machine "busy" includes waiting for a core.

    python -m bench.profile_timeline worker.speedscope [--bin 2]
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path
from typing import Any

__all__ = ["timeline"]

_STAGES = ("materialize_graph", "resolve_entities", "extract_facts", "segment_messages")
_MODEL = ("Session.run", "OnnxEncoder.encode", "LocalEmbedder.encode", "SentenceTransformer.encode")
_SPACY = ("extract_local", "_parse", "Language.pipe")


def _thread_state(frames: list[dict[str, Any]]) -> str:
    names = [f["name"] for f in frames]
    if any(n.startswith(_MODEL) for n in names):
        return "model"
    if any(any(s in n for s in _SPACY) for n in names):
        return "spacy"
    return "idle"


def _loop_state(frames: list[dict[str, Any]]) -> str:
    waiting = frames and frames[-1]["name"].endswith(("select", "poll"))
    if waiting and any(f["name"] == "BaseEventLoop._run_once" for f in frames):
        return "idle"
    for stage in _STAGES:
        if any(f"agents/{stage}.py" in (f.get("file") or "") for f in frames):
            return stage
    return "other"


def _series(path: Path) -> tuple[list[str], list[list[str]], float]:
    """The event loop's states and each helper thread's, aligned on the recording's end (a
    thread started late has fewer samples), and the seconds per sample."""
    doc = json.loads(path.read_text())
    frames = doc["shared"]["frames"]
    loop: list[str] = []
    threads: list[list[str]] = []
    step = 0.01
    for profile in doc["profiles"]:
        stacks = [[frames[i] for i in s] for s in profile["samples"]]
        if profile["weights"]:
            step = float(profile["weights"][0])
        if "MainThread" in profile["name"]:
            loop = [_loop_state(s) for s in stacks]
        elif "asyncio" in profile["name"]:  # the executor's threads: model and spaCy
            threads.append([_thread_state(s) for s in stacks])
    n = len(loop)
    return loop, [["idle"] * (n - len(t)) + t[-n:] for t in threads], step


def timeline(path: Path, bin_s: float = 0.0) -> dict[str, Any]:
    loop, threads, step = _series(path)
    n = len(loop) or 1
    model = [any(t[i] == "model" for t in threads) for i in range(len(loop))]
    spacy = [any(t[i] == "spacy" for t in threads) for i in range(len(loop))]
    busy_loop = [s != "idle" for s in loop]
    first = model.index(True) if any(model) else n
    last = n - 1 - model[::-1].index(True) if any(model) else n
    between = range(first, last + 1)
    out: dict[str, Any] = {
        "seconds": n * step,
        "model_busy": sum(model) / n,
        "model_busy_between_first_and_last": sum(model[i] for i in between) / max(len(between), 1),
        "spacy_busy": sum(spacy) / n,
        "loop_busy": sum(busy_loop) / n,
        "nothing_busy": sum(not (m or s or b) for m, s, b in zip(model, spacy, busy_loop, strict=True)) / n,
        "head_s": first * step,
        "tail_s": (n - 1 - last) * step,
        "loop_by_stage": {k: v / n for k, v in Counter(loop).most_common() if k != "idle"},
    }
    if bin_s:
        size = max(1, int(bin_s / step))
        out["bins"] = [
            {
                "t": a * step,
                "model": sum(model[a : a + size]) / len(model[a : a + size]),
                "spacy": sum(spacy[a : a + size]) / len(spacy[a : a + size]),
                "loop": sum(busy_loop[a : a + size]) / len(busy_loop[a : a + size]),
            }
            for a in range(0, len(loop), size)
        ]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("path", type=Path)
    parser.add_argument(
        "--bin", type=float, default=0.0, help="also print shares per bin of this many seconds"
    )
    args = parser.parse_args()
    result = timeline(args.path, args.bin)
    for row in result.pop("bins", []):
        print(
            f"{row['t']:7.1f} s  model {row['model']:4.0%}  spaCy {row['spacy']:4.0%}  loop {row['loop']:4.0%}"
        )
    for key, value in result.items():
        print(f"{key}: {value if isinstance(value, dict) else round(value, 3)}")


if __name__ == "__main__":
    main()
