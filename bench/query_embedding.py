"""Query embedding: torch (sentence-transformers) against ONNX Runtime, side by side in one run.

Every LoCoMo question of --conversations is embedded as recall embeds it (one call of two
texts: the question and the question without its speakers' names) by the packaged
all-MiniLM-L6-v2, alternating torch and ONNX query by query so that load swings hit both the
same. Also every turn of those conversations in batches of 64, as ingest embeds. Prints the
median and p95 ms per query, turns/s, and the largest difference between the two runtimes'
vectors over all texts (they must agree within 1e-5).

    python -m bench.query_embedding [--conversations conv-26,conv-30] [--threads 1] [--json PATH]
"""

from __future__ import annotations

import argparse
import re
import time
from pathlib import Path

import numpy as np

from bench.common import console, percentile, print_table, write_json
from bench.locomo_data import DATA_DIR, load_sample
from tempr.inference.embeddings import LocalEmbedder, set_torch_threads
from tempr.settings import PACKAGED_EMBEDDING_MODEL

_SPEAKER = re.compile(r"^\[[^\]]*\] ([^:]+):")


def _without_names(question: str, names: set[str]) -> str:
    for name in names:
        question = re.sub(rf"\b{re.escape(name)}(?:'s)?\b", " ", question)
    return re.sub(r"\s+", " ", question).strip()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--conversations", default="conv-26,conv-30")
    parser.add_argument("--threads", type=int, default=1, help="torch and ONNX threads (the API's)")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    set_torch_threads(args.threads)
    samples = [load_sample(DATA_DIR / f"{c}.json") for c in args.conversations.split(",")]
    names = {m.group(1) for s in samples for t in s.turns if (m := _SPEAKER.match(t.text))}
    pairs = [[q.question, _without_names(q.question, names)] for s in samples for q in s.questions]
    turns = [t.text for s in samples for t in s.turns]
    runtimes = {r: LocalEmbedder(PACKAGED_EMBEDDING_MODEL, runtime=r) for r in ("torch", "onnx")}
    assert runtimes["onnx"].runtime == "onnx", "ONNX Runtime did not load (see the log)"
    latencies: dict[str, list[float]] = {r: [] for r in runtimes}
    diff = 0.0
    for pair in pairs:
        out = {}
        for name, embedder in runtimes.items():
            started = time.perf_counter()
            out[name] = embedder.encode(pair)
            latencies[name].append((time.perf_counter() - started) * 1000)
        diff = max(diff, float(np.abs(out["torch"] - out["onnx"]).max()))
    rates = {}
    for name, embedder in runtimes.items():
        started = time.perf_counter()
        vectors = embedder.encode(turns)
        rates[name] = len(turns) / (time.perf_counter() - started)
        if name == "torch":
            reference = vectors
    diff = max(diff, float(np.abs(reference - vectors).max()))
    rows = {
        name: {
            "query_p50_ms": percentile(latencies[name], 50),
            "query_p95_ms": percentile(latencies[name], 95),
            "turns_per_s": rates[name],
        }
        for name in runtimes
    }
    print_table(
        f"Query embedding, {len(pairs)} questions x 2 texts, {len(turns)} turns "
        f"({args.threads} thread; alternated, 2 shared cores, noisy)",
        ["runtime", "query p50 ms", "query p95 ms", "turns/s (batch 64)"],
        [[n, r["query_p50_ms"], r["query_p95_ms"], r["turns_per_s"]] for n, r in rows.items()],
    )
    console.print(f"largest difference between the runtimes' vectors: {diff:.2e} (must be <= 1e-5)")
    write_json(
        args.json,
        {
            "threads": args.threads,
            "questions": len(pairs),
            "turns": len(turns),
            "rows": rows,
            "max_abs_diff": diff,
        },
    )


if __name__ == "__main__":
    main()
