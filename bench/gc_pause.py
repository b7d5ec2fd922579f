"""What a full garbage collection costs the API or the worker process, with and without `gc.freeze()`.

The API loads the embedding model, the token table and the inflection lexicon at start-up
(recall_api/main.py), then freezes what it holds so that collections skip it; the worker
freezes after its context starts (streams/context.py: Faust, the stages, the embedding model),
and loads spaCy at its first chunk. This loads the same as the chosen process, then times full
collections (`gc.collect()`, median of --repeats; wall and this thread's CPU) before and after
the freeze, and counts the objects a collection walks. A full collection stops the event loop:
every request in flight waits for it, and in the worker the stages do.

    python -m bench.gc_pause [--process api|worker] [--repeats 5] [--json PATH]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
from pathlib import Path

from bench.common import print_table, write_json
from tempr.inference.embeddings import embedder_from_settings, get_embedder
from tempr.inference.tokens import get_encoding
from tempr.recall_api.main import create_app
from tempr.recall_api.recall.inflections import load_lexicon
from tempr.settings import PACKAGED_EMBEDDING_MODEL, Settings


def _collections(repeats: int) -> dict[str, float]:
    pauses, cpu = [], []
    for _ in range(repeats):
        started, started_cpu = time.perf_counter(), time.thread_time()
        gc.collect()
        pauses.append((time.perf_counter() - started) * 1000)
        cpu.append((time.thread_time() - started_cpu) * 1000)
    return {
        "median_ms": statistics.median(pauses),
        "max_ms": max(pauses),
        "median_cpu_ms": statistics.median(cpu),
        "objects": len(gc.get_objects()),
    }


def _load_api() -> None:
    create_app  # noqa: B018 (imported for what the API process imports)
    get_embedder(PACKAGED_EMBEDDING_MODEL).encode(["warm up"])
    get_encoding()
    load_lexicon()


def _load_worker() -> None:
    from tempr.agents.extraction.entities import get_nlp
    from tempr.agents.worker import create_worker_app

    settings = Settings()
    create_worker_app(settings)
    embedder_from_settings(settings).encode(["warm up"])
    nlp = get_nlp()
    if nlp is not None:
        list(nlp.pipe(["Caroline went to the support group on 7 May 2023."]))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--process", choices=["api", "worker"], default="api")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    (_load_worker if args.process == "worker" else _load_api)()
    rows = {"as loaded": _collections(args.repeats)}
    gc.freeze()
    rows["frozen"] = _collections(args.repeats)
    print_table(
        f"Full garbage collection in a process holding what the {args.process} loads (2 shared cores)",
        ["state", "objects walked", "median ms", "median CPU ms", "max ms"],
        [[k, r["objects"], r["median_ms"], r["median_cpu_ms"], r["max_ms"]] for k, r in rows.items()],
    )
    write_json(args.json, rows)


if __name__ == "__main__":
    main()
