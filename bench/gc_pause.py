"""What a full garbage collection costs the API process, with and without `gc.freeze()`.

The API loads the embedding model, the token table and the inflection lexicon at start-up
(recall_api/main.py), then freezes what it holds so that collections skip it. This loads
the same, then times full collections (`gc.collect()`, median of --repeats) before and after
the freeze, and counts the objects a collection walks. A full collection stops the event
loop: every request in flight waits for it.

    python -m bench.gc_pause [--repeats 5] [--json PATH]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
from pathlib import Path

from bench.common import print_table, write_json
from tempr.inference.embeddings import get_embedder
from tempr.inference.tokens import get_encoding
from tempr.recall_api.main import create_app
from tempr.recall_api.recall.inflections import load_lexicon
from tempr.settings import PACKAGED_EMBEDDING_MODEL


def _collections(repeats: int) -> dict[str, float]:
    pauses = []
    for _ in range(repeats):
        started = time.perf_counter()
        gc.collect()
        pauses.append((time.perf_counter() - started) * 1000)
    return {"median_ms": statistics.median(pauses), "max_ms": max(pauses), "objects": len(gc.get_objects())}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    create_app  # noqa: B018 (imported for what the API process imports)
    get_embedder(PACKAGED_EMBEDDING_MODEL).encode(["warm up"])
    get_encoding()
    load_lexicon()
    rows = {"as loaded": _collections(args.repeats)}
    gc.freeze()
    rows["frozen"] = _collections(args.repeats)
    print_table(
        "Full garbage collection in a process holding what the API loads (2 shared cores, noisy)",
        ["state", "objects walked", "median ms", "max ms"],
        [[k, r["objects"], r["median_ms"], r["max_ms"]] for k, r in rows.items()],
    )
    write_json(args.json, rows)


if __name__ == "__main__":
    main()
