"""Embedding batches: texts of mixed lengths in arrival order against sorted by length, side by
side in one run.

ONNX Runtime runs a batch padded to its longest text, so a batch's cost is its size times that
length. The extractor embeds a chunk group of up to 64 facts at a time; this bench embeds the
same groups of real text (a LoCoMo conversation's turns, or a running server's stored facts
with --url and --bank) with the packaged model four ways, alternated round by round:

- `arrival/64`: each group in one pass, in arrival order (tempr before stop 28);
- `sorted/N`: each group sorted by character length, N texts per pass;
- `similar`: each group sorted, cut where a text is over 1.25 times its pass's first in length
  (`similar_length_passes`, what `LocalEmbedder` does since stop 28);
- `shipped`: `LocalEmbedder.encode` of each group, whatever it does now.

`--stream` embeds the sustained-stream bench's one-sentence turns instead: texts of one length,
where sorting has nothing to win and must not lose.

It prints texts/s, CPU ms per text (this process), the padded tokens over the real ones, and
the largest difference from the arrival-order vectors (they must agree within 1e-5).

    python -m bench.embedding_batches [--conversations conv-26 | --url URL --bank BANK | --stream]
                                      [--threads 2] [--rounds 3] [--json PATH]
"""

from __future__ import annotations

import argparse
import resource
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import httpx
import numpy as np

from bench.common import console, print_table, write_json
from bench.locomo_data import DATA_DIR, load_sample
from bench.sustained_stream import turn_text
from tempr.inference.embeddings import LocalEmbedder, set_torch_threads, similar_length_passes
from tempr.settings import PACKAGED_EMBEDDING_MODEL

__all__ = ["main", "padding_ratio", "passes"]

GROUP = 64  # the extractor's embed group (TEMPR_EMBEDDING_BATCH_SIZE)


def passes(lengths: Sequence[int], group: int, per_pass: int, *, by_length: bool) -> list[list[int]]:
    """The index lists the model runs: each group of ``group`` consecutive texts, sorted by
    length if asked, cut into passes of ``per_pass``."""
    out = []
    for start in range(0, len(lengths), group):
        members = list(range(start, min(start + group, len(lengths))))
        if by_length:
            members.sort(key=lambda i: lengths[i])
        out += [members[j : j + per_pass] for j in range(0, len(members), per_pass)]
    return out


def padding_ratio(tokens: Sequence[int], plan: list[list[int]]) -> float:
    """Tokens the model runs (each pass padded to its longest) over the texts' own."""
    return sum(max(tokens[i] for i in p) * len(p) for p in plan) / max(sum(tokens), 1)


def _texts(args: argparse.Namespace) -> list[str]:
    if args.stream:
        return [f"User said: {turn_text(b, n)}" for n in range(1, 9) for b in range(GROUP)]
    if args.url:
        texts: list[str] = []
        with httpx.Client(base_url=args.url, timeout=60) as client:
            while True:
                params = {"limit": 1000, "offset": len(texts)}
                page = client.get(f"/v1/banks/{args.bank}/memories", params=params).json()
                texts += [item["text"] for item in page["items"]]
                if not page["items"] or len(texts) >= page["total"]:
                    return texts
    return [t.text for c in args.conversations.split(",") for t in load_sample(DATA_DIR / f"{c}.json").turns]


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--conversations", default="conv-26")
    parser.add_argument("--url", default=None, help="a running server: embed a bank's stored facts instead")
    parser.add_argument("--bank", default="locomo-conv-26")
    parser.add_argument("--stream", action="store_true", help="the sustained stream's one-sentence turns")
    parser.add_argument("--threads", type=int, default=2, help="ONNX threads (the worker's default: 2)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    set_torch_threads(args.threads)
    texts = _texts(args)
    embedder = LocalEmbedder(PACKAGED_EMBEDDING_MODEL, runtime="onnx")
    runner = embedder._onnx
    assert runner is not None, "ONNX Runtime did not load (see the log)"
    tokenizer = embedder._model.tokenizer
    tokens = [min(len(ids), 256) for ids in tokenizer(texts)["input_ids"]]
    chars = [len(t) for t in texts]

    def planned(plan: list[list[int]]) -> Callable[[], np.ndarray]:
        def run() -> np.ndarray:
            out = np.empty((len(texts), embedder.dimension), dtype=np.float32)
            for p in plan:
                out[p] = runner.encode([texts[i] for i in p])
            return out

        return run

    def shipped() -> np.ndarray:
        return np.concatenate([embedder.encode(texts[s : s + GROUP]) for s in range(0, len(texts), GROUP)])

    plans = {"arrival/64": passes(chars, GROUP, GROUP, by_length=False)}
    plans |= {f"sorted/{n}": passes(chars, GROUP, n, by_length=True) for n in (4, 8, 16, 32)}
    plans["similar"] = [
        p
        for group in passes(chars, GROUP, GROUP, by_length=True)
        for p in similar_length_passes(group, texts, GROUP)
    ]
    ways: dict[str, Callable[[], np.ndarray]] = {name: planned(plan) for name, plan in plans.items()}
    ways["shipped"] = shipped
    reference = ways["arrival/64"]()
    rates: dict[str, list[float]] = {name: [] for name in ways}
    cpu_ms: dict[str, list[float]] = {name: [] for name in ways}
    diff = dict.fromkeys(ways, 0.0)
    for round_ in range(args.rounds):
        order = list(ways) if round_ % 2 == 0 else list(reversed(ways))
        for name in order:
            cpu, started = _cpu(), time.perf_counter()
            vectors = ways[name]()
            rates[name].append(len(texts) / (time.perf_counter() - started))
            cpu_ms[name].append((_cpu() - cpu) * 1000 / len(texts))
            diff[name] = max(diff[name], float(np.abs(vectors - reference).max()))
        console.print(
            f"[dim]round {round_ + 1}: " + ", ".join(f"{n} {rates[n][-1]:.0f}/s" for n in ways) + "[/dim]"
        )
    rows = [
        {
            "way": name,
            "texts_per_s": statistics.median(rates[name]),
            "cpu_ms_per_text": statistics.median(cpu_ms[name]),
            "padding": padding_ratio(tokens, plans[name]) if name in plans else None,
            "max_abs_diff": diff[name],
        }
        for name in ways
    ]
    print_table(
        f"Embedding {len(texts)} texts in groups of {GROUP} ({args.threads} ONNX threads, medians of {args.rounds})",
        ["way", "texts/s", "CPU ms/text", "padded/real tokens", "max |Δ| vs arrival/64"],
        [[r["way"], r["texts_per_s"], r["cpu_ms_per_text"], r["padding"], r["max_abs_diff"]] for r in rows],
        digits=2,
    )
    write_json(
        args.json,
        {"rows": rows, "meta": {"texts": len(texts), "threads": args.threads, "rounds": args.rounds}},
    )


if __name__ == "__main__":
    main()
