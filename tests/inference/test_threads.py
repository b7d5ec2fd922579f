"""The worker's thread settings reach numpy's BLAS as well as torch."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tempr.settings import Settings

_PROBE = """
import json
from threadpoolctl import threadpool_info
from tempr.inference.threads import configure_torch_threads
import torch
def blas():
    return [p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"]
before = blas()
configure_torch_threads({threads}, {model})
print(json.dumps({{"torch": torch.get_num_threads(), "blas": blas(), "before": before}}))
"""


def _probe(threads: int, model: int = 0) -> dict[str, object]:
    # A fresh interpreter: the limits are process-wide and would leak into other tests.
    out = subprocess.run(
        [sys.executable, "-c", _PROBE.format(threads=threads, model=model)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_one_thread_limits_torch_and_blas() -> None:
    found = _probe(1)
    assert found["torch"] == 1
    assert found["blas"] and all(n == 1 for n in found["blas"])  # type: ignore[union-attr]


def test_zero_keeps_the_defaults() -> None:
    found = _probe(0)
    assert found["blas"] and found["blas"] == found["before"]


def test_the_model_may_get_more_threads_than_blas() -> None:
    found = _probe(1, 2)
    assert found["torch"] == 2  # what the ONNX Runtime session built next takes
    assert found["blas"] and all(n == 1 for n in found["blas"])  # type: ignore[union-attr]


def test_the_workers_model_gets_two_threads_by_default_and_never_more_than_the_cores() -> None:
    cores = os.cpu_count() or 1
    one = Settings(stream_workers=1)
    assert one.worker_embedding_threads() == min(2, cores)
    assert one.model_copy(update={"embedding_threads": cores + 6}).worker_embedding_threads() == cores
    assert Settings(embedding_threads=0, torch_threads=1).worker_embedding_threads() == 1


def test_stream_workers_share_the_cores_out() -> None:
    cores = os.cpu_count() or 1
    assert Settings().stream_worker_count() == max(1, min(cores // 2, 4))
    assert Settings(stream_workers=3).stream_worker_count() == 3
    # Each of several workers gets its share of the cores for its model, never less than one.
    many = Settings(stream_workers=cores * 2, embedding_threads=8)
    assert many.worker_embedding_threads() == 1
    two = Settings(stream_workers=2, embedding_threads=8)
    assert two.worker_embedding_threads() == max(1, cores // 2)
