"""LoCoMo retrieval, scored strictly: tempr (and its presets) against baselines over raw turns.

Each conversation is retained into its own bank (`locomo-<stem>`) through the real API and
waited on until materialized. Every question of categories 1-4 is then recalled with the
last session's date as the query time. Scores (see `bench.scoring`): Rt@k (k = 5, 10, 20
distinct cited turns), A@N (the gold answer's content words in what packs into N = 512,
1024, 4096 cl100k tokens), turns@10 (distinct turns the top 10 cite), and the citation
recall reported before ("cited R@k"). One packing rule for every system.

Baselines over the raw turns, each carrying its session date ("[8 May 2023] Caroline: ..."):
`bm25`, `dense` (the same MiniLM as tempr), `hybrid` (RRF of both over turns and turns ±1),
and `evidence` (the evidence turns alone: the ceiling of A@N).

    python -m bench.locomo_retrieval [--data DIR] [--conversations conv-26,conv-30] [--url URL]
        [--systems tempr,bm25,dense,hybrid,evidence,...] [--limit-questions N] [--json PATH]

`--data bench/data/heldout` scores the held-out conversations the same way.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from bench.baselines import BM25Ranker, DenseRanker, HybridRanker, Ranker
from bench.common import console, print_table, running_server, wait_until_materialized, write_json
from bench.locomo_data import (
    CATEGORIES,
    CATEGORY_NAMES,
    DATA_DIR,
    Question,
    Sample,
    conversation_paths,
    load_sample,
)
from bench.locomo_score import KS, MAX_TOKENS, Outcome, Ranked, aggregate, score_ranking
from tempr.settings import PACKAGED_EMBEDDING_MODEL

__all__ = [
    "ALL_SYSTEMS",
    "BASELINES",
    "TEMPR_PRESETS",
    "main",
    "run_baseline",
    "run_evidence",
    "shared_encoder",
]

BATCH_SIZE = 200
TEMPR_PRESETS = {
    "tempr": "default",
    "tempr-graph": "graph",  # the default leaves the graph arm out: this row is what it adds
    "tempr-no-diversity": "no-diversity",
    "tempr-no-passage": "no-passage",
    "tempr-no-temporal": "no-temporal",
    "tempr-no-keyword": "no-keyword",
    "tempr-no-rerank": "no-rerank",
    "tempr-no-name-blend": "no-name-blend",
    "tempr-semantic-only": "semantic-only",
    "tempr-rerank-300": "rerank-300",
}
BASELINES = ("bm25", "dense", "hybrid", "evidence")
ALL_SYSTEMS = ("tempr", *BASELINES, *(s for s in TEMPR_PRESETS if s != "tempr"))
RECALL_PATH = "/v1/banks/{bank_id}/recall"


# ── baselines over raw turns ─────────────────────────────────────────────────────────────


def run_baseline(ranker: Ranker, sample: Sample, questions: Sequence[Question]) -> list[Outcome]:
    outcomes = []
    for question in questions:
        started = time.perf_counter()
        order = ranker.rank(question.question)
        latency_ms = (time.perf_counter() - started) * 1000
        ranked = [Ranked((sample.turns[i].dia_id,), sample.turns[i].text) for i in order]
        outcomes.append(Outcome(question.category, score_ranking(question, ranked), latency_ms))
    return outcomes


def run_evidence(sample: Sample, questions: Sequence[Question]) -> list[Outcome]:
    """The evidence turns alone, in the order the dataset lists them."""
    texts = sample.turn_texts()
    return [
        Outcome(q.category, score_ranking(q, [Ranked((t,), texts[t]) for t in q.evidence]), 0.0)
        for q in questions
    ]


class CachedEncoder:
    """The embedding model, encoding each distinct text once: dense and hybrid share the
    turns' and the questions' vectors (on a busy machine encoding is most of a baseline's cost)."""

    def __init__(self) -> None:
        from tempr.inference.embeddings import get_embedder

        self._encode = get_embedder(PACKAGED_EMBEDDING_MODEL).encode
        self._cache: dict[str, np.ndarray] = {}

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in self._cache]
        if missing:
            self._cache.update(zip(missing, np.asarray(self._encode(missing)), strict=True))
        return np.stack([self._cache[t] for t in texts])


_ENCODER: CachedEncoder | None = None


def shared_encoder() -> CachedEncoder:
    global _ENCODER
    if _ENCODER is None:
        _ENCODER = CachedEncoder()
    return _ENCODER


# ── tempr through the API ────────────────────────────────────────────────────────────────


class RecallUnavailable(RuntimeError):
    """The server cannot answer recall for this system (no endpoint, unknown preset, ...)."""


def warm_up(client: httpx.Client) -> float:
    """Retain one message into a scratch bank and wait until it is materialized: /health is
    ok before the worker has joined its consumer group, which must not count as ingest time."""
    started = time.perf_counter()
    item = {"content": "Warm-up: the benchmark is starting.", "message_id": "warm-up", "speaker": "bench"}
    response = client.post("/v1/banks/locomo-warm-up/memories", json={"items": [item]})
    response.raise_for_status()
    wait_until_materialized(client)
    return time.perf_counter() - started


def ingest(client: httpx.Client, sample: Sample) -> dict[str, Any]:
    """Retain every turn (batches of ≤ 200), wait until materialized; seconds and facts."""
    started = time.perf_counter()
    for offset in range(0, len(sample.items), BATCH_SIZE):
        batch = sample.items[offset : offset + BATCH_SIZE]
        response = client.post(
            f"/v1/banks/{sample.bank}/memories",
            json={"items": [item.model_dump(mode="json", exclude_defaults=True) for item in batch]},
        )
        if response.status_code != 202:
            raise RuntimeError(f"retain into {sample.bank} failed: {response.status_code} {response.text}")
    posted = time.perf_counter() - started
    wait_until_materialized(client)
    seconds = time.perf_counter() - started
    total = client.get(f"/v1/banks/{sample.bank}/memories", params={"limit": 1}).json()["total"]
    return {
        "turns": len(sample.items),
        "facts": total,
        "post_seconds": posted,
        "seconds": seconds,
        "turns_per_second": len(sample.items) / seconds if seconds else None,
    }


def recall_once(
    client: httpx.Client, bank: str, query: str, preset: str, when: datetime
) -> tuple[list[dict[str, Any]], float]:
    body = {
        "query": query,
        "budget": "mid",
        "max_tokens": MAX_TOKENS,
        "query_timestamp": when.isoformat(),
        "preset": preset,
    }
    started = time.perf_counter()
    response = client.post(RECALL_PATH.format(bank_id=bank), json=body)
    latency_ms = (time.perf_counter() - started) * 1000
    if response.status_code in (400, 404, 405, 422, 501):
        raise RecallUnavailable(
            f"recall with preset {preset!r}: {response.status_code} {response.text[:300]}"
        )
    response.raise_for_status()
    return response.json().get("results", []), latency_ms


def run_tempr(
    client: httpx.Client, preset: str, sample: Sample, questions: Sequence[Question]
) -> list[Outcome]:
    outcomes = []
    for question in questions:
        results, latency_ms = recall_once(
            client, sample.bank, question.question, preset, sample.query_timestamp
        )
        ranked = [Ranked(tuple(r.get("source_message_ids") or ()), r["text"]) for r in results]
        outcomes.append(Outcome(question.category, score_ranking(question, ranked), latency_ms))
    return outcomes


# ── the run ──────────────────────────────────────────────────────────────────────────────


@dataclass
class Run:
    systems: list[str]
    outcomes: dict[str, list[Outcome]] = field(default_factory=dict)
    unavailable: dict[str, str] = field(default_factory=dict)
    ingest: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)

    def add(self, system: str, outcomes: list[Outcome]) -> None:
        self.outcomes.setdefault(system, []).extend(outcomes)


def _run_baselines(run: Run, sample: Sample, questions: Sequence[Question]) -> None:
    texts = [t.text for t in sample.turns]
    if "bm25" in run.systems:
        run.add("bm25", run_baseline(BM25Ranker(texts), sample, questions))
    if "dense" in run.systems:
        run.add("dense", run_baseline(DenseRanker(texts, shared_encoder()), sample, questions))
    if "hybrid" in run.systems:
        ranker = HybridRanker(texts, [t.dia_id for t in sample.turns], shared_encoder())
        run.add("hybrid", run_baseline(ranker, sample, questions))
    if "evidence" in run.systems:
        run.add("evidence", run_evidence(sample, questions))


def _run_tempr_systems(run: Run, client: httpx.Client, sample: Sample, questions: Sequence[Question]) -> None:
    for system, preset in TEMPR_PRESETS.items():
        if system not in run.systems or system in run.unavailable:
            continue
        console.print(f"  {system}: {len(questions)} recalls")
        try:
            run.add(system, run_tempr(client, preset, sample, questions))
        except RecallUnavailable as exc:
            run.unavailable[system] = str(exc)
            console.print(f"[yellow]  {system} skipped: {exc}[/yellow]")


def _tempr_client(run: Run, url: str | None, stack: ExitStack) -> httpx.Client | None:
    """A client of the server under test, or None when no tempr system is asked for."""
    if not any(s in TEMPR_PRESETS for s in run.systems):
        return None
    base_url = stack.enter_context(running_server(url))
    client = stack.enter_context(httpx.Client(base_url=base_url, timeout=120))
    run.timings["warm_up_s"] = warm_up(client)
    console.print(f"pipeline warm after {run.timings['warm_up_s']:.1f}s")
    return client


def already_ingested(client: httpx.Client, sample: Sample) -> bool:
    """The bank holds every turn, all materialized (a previous run against this server)."""
    response = client.get(f"/v1/banks/{sample.bank}/stats")
    if response.status_code != 200:
        return False
    stats = response.json()
    return stats["messages"] == len(sample.items) and stats["pending_events"] == 0


def evaluate(
    run: Run, samples: Sequence[Sample], url: str | None, limit: int | None, *, reuse_banks: bool = False
) -> None:
    with ExitStack() as stack:
        client = _tempr_client(run, url, stack)
        for sample in samples:
            questions = sample.questions[:limit] if limit else sample.questions
            console.print(f"{sample.stem}: {len(sample.turns)} turns, {len(questions)} questions")
            _run_baselines(run, sample, questions)
            if client is None:
                continue
            if reuse_banks and already_ingested(client, sample):
                console.print(f"  reusing {sample.bank}")
            else:
                console.print(f"  ingesting into {sample.bank}")
                stats = run.ingest[sample.stem] = ingest(client, sample)
                console.print(f"  {stats['facts']} facts in {stats['seconds']:.1f}s")
            _run_tempr_systems(run, client, sample, questions)


def build_report(
    run: Run, samples: Sequence[Sample], limit: int | None, url: str | None, data_dir: Path
) -> dict[str, Any]:
    questions = sum(len(s.questions[:limit] if limit else s.questions) for s in samples)
    return {
        "systems": {
            system: aggregate(run.outcomes[system]) for system in run.systems if system in run.outcomes
        },
        "meta": {
            "date": datetime.now(UTC).isoformat(timespec="seconds"),
            "data": str(data_dir),
            "conversations": [s.stem for s in samples],
            "questions": questions,
            "skipped": {
                "questions_without_valid_evidence": sum(s.skipped_questions for s in samples),
                "dropped_evidence_ids": {
                    s.stem: s.dropped_evidence_ids for s in samples if s.dropped_evidence_ids
                },
            },
            "limit_questions": limit,
            "server": url or "embedded",
            "max_tokens": MAX_TOKENS,
            "budget": "mid",
            "embedding_model": PACKAGED_EMBEDDING_MODEL,
            "ingest": run.ingest,
            "ingest_seconds": sum(v["seconds"] for v in run.ingest.values()),
            "facts": sum(v["facts"] for v in run.ingest.values()),
            "unavailable": run.unavailable,
            "timings": run.timings,
        },
    }


def print_report(report: Mapping[str, Any]) -> None:
    systems = report["systems"]
    strict = [*(f"Rt@{k}" for k in KS), "A@512", "A@1024", "A@4096", "turns@10", "cited@10", "cited@budget"]
    print_table(
        f"LoCoMo retrieval, strict ({report['meta']['questions']} questions, {report['meta']['data']})",
        ["system", *strict, "p50 ms", "p95 ms", "n"],
        [
            [
                name,
                *(s["overall"][k] for k in strict),
                f"{s['overall']['latency_ms_p50']:.1f}",
                f"{s['overall']['latency_ms_p95']:.1f}",
                s["overall"]["n"],
            ]
            for name, s in systems.items()
        ],
    )
    for metric in ("Rt@10", "A@1024"):
        print_table(
            f"{metric} by category",
            ["system", *(f"{c} {CATEGORY_NAMES[c]}" for c in CATEGORIES)],
            [[name, *(s["by_category"][c][metric] for c in CATEGORIES)] for name, s in systems.items()],
        )
    for system, reason in report["meta"]["unavailable"].items():
        console.print(f"[yellow]{system}: not run ({reason})[/yellow]")


def parse_systems(value: str) -> list[str]:
    systems = [s.strip() for s in value.split(",") if s.strip()]
    unknown = [s for s in systems if s not in ALL_SYSTEMS]
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown systems {unknown}; choose from {', '.join(ALL_SYSTEMS)}")
    return systems


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument(
        "--data", type=Path, default=DATA_DIR, help=f"conversations folder (default {DATA_DIR})"
    )
    parser.add_argument("--conversations", default=None, help="comma-separated stems (default: all)")
    parser.add_argument("--url", default=None, help="a running server (default: start the embedded one)")
    parser.add_argument("--json", type=Path, default=None, help="write the results here")
    parser.add_argument(
        "--systems", type=parse_systems, default=list(ALL_SYSTEMS), help=", ".join(ALL_SYSTEMS)
    )
    parser.add_argument(
        "--limit-questions", type=int, default=None, help="first N questions per conversation"
    )
    parser.add_argument(
        "--reuse-banks",
        action="store_true",
        help="with --url: skip ingesting a conversation whose bank already holds all its turns",
    )
    args = parser.parse_args(argv)

    samples = [load_sample(path) for path in conversation_paths(args.conversations, args.data)]
    run = Run(systems=args.systems)
    started = time.perf_counter()
    evaluate(run, samples, args.url, args.limit_questions, reuse_banks=args.reuse_banks)
    run.timings["total_s"] = time.perf_counter() - started
    report = build_report(run, samples, args.limit_questions, args.url, args.data)
    print_report(report)
    write_json(args.json, report)


if __name__ == "__main__":
    main()
