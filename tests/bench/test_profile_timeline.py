"""The worker timeline: which thread was busy when, read from a py-spy speedscope file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.profile_timeline import timeline

_FRAMES = [
    {"name": "BaseEventLoop._run_once", "file": "asyncio/base_events.py"},
    {"name": "EpollSelector.select", "file": "selectors.py"},
    {"name": "resolve_bank_batch", "file": "/x/agents/resolve_entities.py"},
    {"name": "_worker", "file": "concurrent/futures/thread.py"},
    {"name": "OnnxEncoder.encode", "file": "/x/inference/onnx_encoder.py"},
    {"name": "Session.run", "file": "onnxruntime/session.py"},
    {"name": "extract_local_many", "file": "/x/agents/extraction/local.py"},
]
LOOP_IDLE, LOOP_RESOLVE = [0, 1], [0, 2]
IDLE, MODEL, SPACY = [3], [3, 4, 5], [3, 6]


def _write(tmp_path: Path, loop: list[list[int]], *threads: list[list[int]]) -> Path:
    def profile(name: str, samples: list[list[int]]) -> dict[str, object]:
        return {"type": "sampled", "name": name, "samples": samples, "weights": [0.01] * len(samples)}

    doc = {
        "shared": {"frames": _FRAMES},
        "profiles": [
            profile('Thread 1 "MainThread"', loop),
            *(profile(f'Thread {i} "asyncio_{i}"', t) for i, t in enumerate(threads)),
        ],
    }
    path = tmp_path / "w.speedscope"
    path.write_text(json.dumps(doc))
    return path


def test_shares_head_and_tail_of_the_model_and_a_late_thread_aligned_on_the_end(tmp_path: Path) -> None:
    # 10 ticks: the model runs ticks 2-6 on one thread; spaCy on a thread that started at tick 4
    # (ticks 4-5); the loop resolves at ticks 6-9.
    loop = [LOOP_IDLE] * 6 + [LOOP_RESOLVE] * 4
    model = [IDLE] * 2 + [MODEL] * 5 + [IDLE] * 3
    spacy = [SPACY] * 2 + [IDLE] * 4  # 6 samples: ticks 4-9
    got = timeline(_write(tmp_path, loop, model, spacy), bin_s=0.05)
    assert got["seconds"] == pytest.approx(0.10)
    assert got["model_busy"] == pytest.approx(0.5)
    assert got["model_busy_between_first_and_last"] == pytest.approx(1.0)
    assert got["spacy_busy"] == pytest.approx(0.2)
    assert got["loop_busy"] == pytest.approx(0.4)
    assert got["nothing_busy"] == pytest.approx(0.2)  # ticks 0 and 1
    assert got["head_s"] == pytest.approx(0.02) and got["tail_s"] == pytest.approx(0.03)
    assert got["loop_by_stage"] == {"resolve_entities": pytest.approx(0.4)}
    assert [b["model"] for b in got["bins"]] == [pytest.approx(0.6), pytest.approx(0.4)]
