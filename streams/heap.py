"""A process's start-up heap, kept out of the cyclic garbage collector's full passes (the worker
and the API each freeze theirs once started).

A started worker holds ~560k objects that live as long as it does: the modules, Faust and
aiokafka, the embedding model's Python side. CPython's full (generation 2) collection walks
every one of them each time it runs, ~0.25-0.3 s of CPU on the event loop's thread or whichever
thread allocated last, 2-3 times while one LoCoMo conversation is ingested; the time shows up
in whatever was allocating (a graph event's decode averaged 6 ms of CPU in the worker, 0.4-0.6
ms alone; docs/benchmarks.md, "Ingest CPU, stop 18"). Frozen after start-up, those objects are skipped by every later collection.
They are still freed by reference counting when dropped; only a cycle among them that
becomes unreachable is never collected, and they are meant to live until the process ends.
"""

from __future__ import annotations

import gc

__all__ = ["freeze_start_up_heap"]


def freeze_start_up_heap() -> int:
    """Collect what start-up left behind, then move every object alive now to the permanent
    generation (`gc.freeze`); returns how many objects are frozen."""
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()
