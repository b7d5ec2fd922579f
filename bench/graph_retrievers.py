"""The graph arm on LoCoMo: no graph against spreading activation (bfs) and meta-path forward
push (mpfp), side by side in one run on the same banks, scored strictly.

- Rt@k: walk the results in rank order, collecting the turns they cite, until k distinct
  turns are collected; the share of the question's evidence turns among them.
- A@N: the share of the gold answer's content words (lowercase ``[a-z0-9]+`` minus a fixed
  stop list) found in the result texts packed into N cl100k tokens, in rank order, skipping a
  text that does not fit and going on.

    python -m bench.graph_retrievers [--conversations conv-26,conv-30] [--url URL]
        [--variants no-graph,bfs,mpfp] [--limit-questions N] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import re
import time
from collections.abc import Iterable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from bench.common import console, percentile, print_table, running_server, write_json
from bench.locomo_retrieval import (
    CATEGORIES,
    CATEGORY_NAMES,
    RECALL_PATH,
    Sample,
    already_ingested,
    conversation_paths,
    ingest,
    load_sample,
    parse_evidence,
    warm_up,
)
from tempr.inference.tokens import count_tokens

KS = (5, 10, 20)
BUDGETS = (512, 1024, 4096)
# variant -> (preset, graph_retriever)
VARIANTS: dict[str, tuple[str, str | None]] = {
    "no-graph": ("no-graph", None),
    "bfs": ("graph", "bfs"),
    "mpfp": ("graph", "mpfp"),
}
_STOP_LIST = """the a an of to in and or is was were be been on at for with what when where who how did do
does i you he she they it his her their my your that this as by from has have had not no yes"""
STOP_WORDS = frozenset(_STOP_LIST.split())
_WORD = re.compile(r"[a-z0-9]+")


def content_words(text: str) -> set[str]:
    return {w for w in _WORD.findall(str(text).lower()) if w not in STOP_WORDS}


def turn_recall(ranked_sources: Sequence[Iterable[str]], evidence: Sequence[str], k: int) -> float:
    """Rt@k: the share of ``evidence`` among the first k distinct turns the results cite."""
    seen: list[str] = []
    for sources in ranked_sources:
        for turn in sources:
            if turn not in seen and len(seen) < k:
                seen.append(turn)
        if len(seen) >= k:
            break
    return len(set(evidence) & set(seen)) / len(set(evidence))


def pack(texts: Sequence[str], max_tokens: int) -> list[str]:
    """Texts in rank order within ``max_tokens``: one that does not fit is skipped."""
    packed, used = [], 0
    for text in texts:
        n = count_tokens(text)
        if used + n <= max_tokens:
            packed.append(text)
            used += n
    return packed


def answer_recall(answer: str, packed: Sequence[str]) -> float | None:
    wanted = content_words(answer)
    if not wanted:
        return None
    found: set[str] = set()
    for text in packed:
        found |= content_words(text)
    return len(wanted & found) / len(wanted)


@dataclass(frozen=True)
class Asked:
    question: str
    category: str
    evidence: tuple[str, ...]
    answer: str


def questions_with_answers(path: Path, sample: Sample) -> list[Asked]:
    known = {t.dia_id for t in sample.turns}
    out = []
    for qa in json.loads(path.read_text()).get("qa", []):
        category = str(qa.get("category"))
        kept, _ = parse_evidence(qa.get("evidence") or [], known)
        if category in CATEGORIES and kept:
            out.append(Asked(str(qa["question"]), category, tuple(kept), str(qa.get("answer", ""))))
    return out


def score(results: list[dict[str, Any]], asked: Asked) -> dict[str, float | None]:
    sources = [r.get("source_message_ids") or [] for r in results]
    texts = [r["text"] for r in results]
    out: dict[str, float | None] = {f"Rt@{k}": turn_recall(sources, asked.evidence, k) for k in KS}
    for n in BUDGETS:
        out[f"A@{n}"] = answer_recall(asked.answer, pack(texts, n))
    out["turns@10"] = float(len({t for s in sources[:10] for t in s}))
    return out


def mean(rows: list[dict[str, Any]], key: str) -> float:
    values = [r[key] for r in rows if r.get(key) is not None]
    return float(np.mean(values)) if values else float("nan")


METRICS = [*(f"Rt@{k}" for k in KS), *(f"A@{n}" for n in BUDGETS), "turns@10"]


def summarize(rows: list[dict[str, Any]]) -> dict[str, float]:
    out = {m: mean(rows, m) for m in METRICS}
    out["p50_ms"] = percentile([r["ms"] for r in rows], 50)
    out["p95_ms"] = percentile([r["ms"] for r in rows], 95)
    out["n"] = len(rows)
    return out


def recall(client: httpx.Client, bank: str, query: str, variant: str, when: str) -> tuple[list[dict], float]:
    preset, retriever = VARIANTS.get(variant) or (variant.split("+") + [None])[:2]
    body: dict[str, Any] = {"query": query, "budget": "mid", "max_tokens": 4096, "query_timestamp": when}
    body["preset"] = preset
    if retriever:
        body["graph_retriever"] = retriever
    started = time.perf_counter()
    response = client.post(RECALL_PATH.format(bank_id=bank), json=body)
    ms = (time.perf_counter() - started) * 1000
    response.raise_for_status()
    return response.json()["results"], ms


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--conversations", default=None)
    parser.add_argument("--url", default=None)
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--limit-questions", type=int, default=None)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    variants = [v for v in args.variants.split(",") if v]
    rows: dict[str, list[dict[str, Any]]] = {v: [] for v in variants}
    with ExitStack() as stack:
        client = stack.enter_context(
            httpx.Client(base_url=stack.enter_context(running_server(args.url)), timeout=120)
        )
        warm_up(client)
        for path in conversation_paths(args.conversations):
            sample = load_sample(path)
            asked = questions_with_answers(path, sample)[: args.limit_questions]
            if not already_ingested(client, sample):
                stats = ingest(client, sample)
                console.print(f"{sample.stem}: {stats['facts']} facts in {stats['seconds']:.1f}s")
            when = sample.query_timestamp.isoformat()
            # Interleaved per question, so load on the machine falls on every variant alike.
            for q in asked:
                for variant in variants:
                    results, ms = recall(client, sample.bank, q.question, variant, when)
                    rows[variant].append({"category": q.category, "ms": ms, **score(results, q)})
            console.print(f"{sample.stem}: {len(asked)} questions")
    report = {
        v: {
            "overall": summarize(r),
            "by_category": {c: summarize([x for x in r if x["category"] == c]) for c in CATEGORIES},
        }
        for v, r in rows.items()
    }
    print_table(
        "graph arm, strict metrics",
        ["variant", *METRICS, "p50 ms", "p95 ms", "n"],
        [
            [
                v,
                *(s["overall"][m] for m in METRICS),
                s["overall"]["p50_ms"],
                s["overall"]["p95_ms"],
                s["overall"]["n"],
            ]
            for v, s in report.items()
        ],
    )
    print_table(
        "Rt@10 / A@1024 by category",
        ["variant", *(f"{c} {CATEGORY_NAMES[c]}" for c in CATEGORIES)],
        [
            [
                v,
                *(
                    f"{s['by_category'][c]['Rt@10']:.3f} / {s['by_category'][c]['A@1024']:.3f}"
                    for c in CATEGORIES
                ),
            ]
            for v, s in report.items()
        ],
    )
    write_json(args.json, report)


if __name__ == "__main__":
    main()
