"""The worker's start-up heap is frozen: kept alive objects skipped, garbage still collected."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from tempr.streams.heap import freeze_start_up_heap


class _Node:
    def __init__(self) -> None:
        self.me = self  # a cycle: only the cyclic collector frees it


@pytest.fixture(autouse=True)
def _unfrozen() -> Iterator[None]:
    gc.unfreeze()
    yield
    gc.unfreeze()


def test_objects_alive_at_start_up_are_frozen() -> None:
    kept = [_Node() for _ in range(100)]
    frozen = freeze_start_up_heap()
    # Not compared with a second count: other threads of the suite's process free frozen
    # objects meanwhile (a CI run saw 804,821 then 804,819).
    assert frozen >= len(kept) and gc.get_freeze_count() >= len(kept)
    tracked = {id(o) for o in gc.get_objects()}
    assert not any(id(node) in tracked for node in kept)  # no generation holds them any more


def test_garbage_left_by_start_up_is_collected_not_frozen() -> None:
    dropped = _Node()
    gone = weakref.ref(dropped)
    del dropped
    freeze_start_up_heap()
    assert gone() is None


def test_cycles_made_after_the_freeze_are_still_collected() -> None:
    freeze_start_up_heap()
    later = _Node()
    gone = weakref.ref(later)
    del later
    gc.collect()
    assert gone() is None
