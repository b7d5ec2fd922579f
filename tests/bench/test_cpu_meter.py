"""The bench's CPU meter counts a child's own process tree (the API's uvicorn workers are
children of its process) and the bench's own CPU when asked."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import psutil

from bench.cpu_meter import CpuMeter

# A parent that idles while its own child, once told to go, burns ~0.4 s of CPU, says so and
# stays alive (as `tempr api --workers 2` idles while its workers serve).
_PARENT = """
import subprocess, sys
burn = (
    "import sys, time\\nsys.stdin.readline()\\n"
    "end = time.process_time() + 0.4\\nwhile time.process_time() < end: pass\\n"
    "print('burnt', flush=True)\\ntime.sleep(60)"
)
subprocess.run([sys.executable, "-c", burn], check=True)
"""


def test_a_childs_workers_and_the_bench_itself_are_counted(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", _PARENT], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        supervisor = SimpleNamespace(
            children=[SimpleNamespace(name="api", proc=proc)],
            broker=None,
            settings=SimpleNamespace(pg_dir=tmp_path / "no-postgres-here"),
        )
        meter = CpuMeter(supervisor, include_self=True)
        meter.begin()
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
        end = time.process_time() + 0.2
        while time.process_time() < end:  # the bench's own work
            pass
        assert proc.stdout is not None and proc.stdout.readline().strip() == "burnt"
        spent = meter.end()
    finally:
        for p in psutil.Process(proc.pid).children(recursive=True):
            p.kill()
        proc.kill()
        proc.wait()
    assert spent["api"] >= 0.25, spent  # the grandchild's, though the child itself idled
    assert 0.15 <= spent["bench"] < 1.0, spent
    assert spent["postgres"] == 0.0
