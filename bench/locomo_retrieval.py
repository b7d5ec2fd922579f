"""LoCoMo evidence recall: tempr (and its ablations) against BM25 and dense baselines.

Each conversation is retained into its own bank (`locomo-<stem>`) through the real API and
waited on until materialized. Every question of categories 1-4 is then recalled with the
last session's date as the query time, and scored by evidence recall: the share of the
question's evidence dia_ids covered by the sources of the top-k results (k = 5, 10, 20), and
by everything returned within 4096 tokens. The baselines rank the raw turns of the same
conversation ("speaker: text", photo captions included) with BM25 and with cosine similarity
of the same embedding model.

Only the turns are used as input: the dataset's observations, summaries and event
annotations are never read.

    python -m bench.locomo_retrieval [--conversations conv-26,conv-30] [--url URL]
        [--systems tempr,bm25,dense,...] [--limit-questions N] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from bench.common import (
    REPO,
    console,
    percentile,
    print_table,
    running_server,
    wait_until_materialized,
    write_json,
)
from tempr.conversations import parse_locomo_date, read_conversations
from tempr.inference.tokens import count_tokens
from tempr.settings import PACKAGED_EMBEDDING_MODEL

DATA_DIR = REPO.parent / "shared" / "data" / "locomo"
CATEGORIES = ("1", "2", "3", "4")
CATEGORY_NAMES = {"1": "multi-hop", "2": "temporal", "3": "open-domain", "4": "single-hop"}
KS = (5, 10, 20)
MAX_TOKENS = 4096
BATCH_SIZE = 200
TEMPR_PRESETS = {
    "tempr": "default",
    "tempr-no-graph": "no-graph",
    "tempr-no-diversity": "no-diversity",
    "tempr-no-temporal": "no-temporal",
    "tempr-no-keyword": "no-keyword",
    "tempr-no-rerank": "no-rerank",
    "tempr-no-name-blend": "no-name-blend",
}
BASELINES = ("bm25", "dense")
ALL_SYSTEMS = ("tempr", *BASELINES, *(s for s in TEMPR_PRESETS if s != "tempr"))
RECALL_PATH = "/v1/banks/{bank_id}/recall"

_SESSION_DATE = re.compile(r"^session_(\d+)_date_time$")
_EVIDENCE_SPLIT = re.compile(r"[;,\s]+")
_TOKEN = re.compile(r"[a-z0-9]+")


# ── data ─────────────────────────────────────────────────────────────────────────────────


@dataclass(frozen=True)
class Turn:
    dia_id: str
    text: str


@dataclass(frozen=True)
class Question:
    conversation: str
    question: str
    category: str
    evidence: tuple[str, ...]


@dataclass
class Sample:
    """One LoCoMo conversation: its retain items, raw turns and scorable questions."""

    stem: str
    items: list[Any]
    turns: list[Turn]
    questions: list[Question]
    query_timestamp: datetime
    skipped_questions: int = 0
    dropped_evidence_ids: list[str] = field(default_factory=list)

    @property
    def bank(self) -> str:
        return f"locomo-{self.stem}"


def parse_evidence(raw: Iterable[str], known: set[str]) -> tuple[list[str], list[str]]:
    """Split evidence strings ("D8:6; D9:17" holds two ids) and keep the ids that name a turn
    of the conversation; returns (kept, dropped), each without duplicates, in order."""
    kept: list[str] = []
    dropped: list[str] = []
    for entry in raw:
        for part in _EVIDENCE_SPLIT.split(str(entry)):
            if not part:
                continue
            target = kept if part in known else dropped
            if part not in target:
                target.append(part)
    return kept, dropped


def last_session_date(data: Mapping[str, Any]) -> datetime:
    numbered = [
        (int(m.group(1)), key)
        for key in data
        if (m := _SESSION_DATE.match(key)) and data.get(f"session_{m.group(1)}")
    ]
    _, key = max(numbered)
    return parse_locomo_date(data[key])


def load_sample(path: Path) -> Sample:
    data = json.loads(path.read_text())
    items = [item for conversation in read_conversations(path) for item in conversation.items]
    turns = [Turn(item.message_id, f"{item.speaker}: {item.content}") for item in items]
    known = {turn.dia_id for turn in turns}
    sample = Sample(path.stem, items, turns, [], last_session_date(data))
    for qa in data.get("qa", []):
        category = str(qa.get("category"))
        if category not in CATEGORIES:
            continue
        kept, dropped = parse_evidence(qa.get("evidence") or [], known)
        sample.dropped_evidence_ids.extend(dropped)
        if not kept:
            sample.skipped_questions += 1
            continue
        sample.questions.append(Question(path.stem, str(qa["question"]), category, tuple(kept)))
    return sample


def conversation_paths(names: str | None, data_dir: Path = DATA_DIR) -> list[Path]:
    if not names:
        return sorted(data_dir.glob("*.json"))
    paths = [data_dir / f"{name.strip().removesuffix('.json')}.json" for name in names.split(",")]
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        raise SystemExit(f"no such conversation: {', '.join(missing)}")
    return paths


# ── scoring (pure) ───────────────────────────────────────────────────────────────────────


def evidence_recall(
    ranked_sources: Sequence[Iterable[str]], evidence: Iterable[str], k: int | None = None
) -> float:
    """Share of `evidence` covered by the union of the sources of the top-`k` results
    (all results when k is None; fewer than k results are used as they are)."""
    wanted = set(evidence)
    if not wanted:
        raise ValueError("a question without evidence cannot be scored")
    top = ranked_sources if k is None else ranked_sources[:k]
    covered: set[str] = set()
    for sources in top:
        covered.update(sources)
    return len(wanted & covered) / len(wanted)


def take_within_budget(
    ranked_ids: Sequence[int], token_counts: Sequence[int], max_tokens: int = MAX_TOKENS
) -> list[int]:
    """The prefix of a ranking whose texts fit in `max_tokens` (stops at the first misfit)."""
    taken: list[int] = []
    used = 0
    for index in ranked_ids:
        if used + token_counts[index] > max_tokens:
            break
        used += token_counts[index]
        taken.append(index)
    return taken


@dataclass(frozen=True)
class Outcome:
    """The score of one system on one question."""

    category: str
    recall_at: Mapping[str, float]  # "recall@5", ..., "recall@budget"
    latency_ms: float


def score_question(
    question: Question, ranked_sources: Sequence[Iterable[str]], budget_sources: Sequence[Iterable[str]]
) -> dict[str, float]:
    scores = {f"recall@{k}": evidence_recall(ranked_sources, question.evidence, k) for k in KS}
    scores["recall@budget"] = evidence_recall(budget_sources, question.evidence)
    return scores


def summarize_outcomes(outcomes: Sequence[Outcome]) -> dict[str, float]:
    """Mean of each recall, latency p50/p95 and n over a set of questions."""
    keys = [*(f"recall@{k}" for k in KS), "recall@budget"]
    summary: dict[str, float] = {
        key: float(np.mean([o.recall_at[key] for o in outcomes])) if outcomes else float("nan")
        for key in keys
    }
    latencies = [o.latency_ms for o in outcomes]
    summary["latency_ms_p50"] = percentile(latencies, 50)
    summary["latency_ms_p95"] = percentile(latencies, 95)
    summary["n"] = len(outcomes)
    return summary


def aggregate(outcomes: Sequence[Outcome]) -> dict[str, Any]:
    """{"overall": {...}, "by_category": {"1": {...}, ..., "4": {...}}}."""
    return {
        "overall": summarize_outcomes(outcomes),
        "by_category": {
            category: summarize_outcomes([o for o in outcomes if o.category == category])
            for category in CATEGORIES
        },
    }


# ── baselines over raw turns ─────────────────────────────────────────────────────────────


def _stop_words() -> frozenset[str]:
    """spaCy's English list (a dependency already). scikit-learn's list also drops content
    words ("find", "fire", "move", "last", ...) and costs BM25 about 0.04 of recall@10 here."""
    from spacy.lang.en.stop_words import STOP_WORDS as SPACY_STOP_WORDS

    return frozenset(SPACY_STOP_WORDS)


STOP_WORDS = _stop_words()


def tokenize(text: str) -> list[str]:
    """Lowercase, alphanumeric runs, English stop words removed."""
    return [token for token in _TOKEN.findall(text.lower()) if token not in STOP_WORDS]


def _descending(scores: np.ndarray) -> list[int]:
    """Indices by score, highest first; ties keep corpus order."""
    return [int(i) for i in np.argsort(-scores, kind="stable")]


class BM25Ranker:
    """Okapi BM25 (rank-bm25, k1 = 1.5, b = 0.75) over tokenized turns."""

    def __init__(self, texts: Sequence[str]) -> None:
        from rank_bm25 import BM25Okapi

        self._bm25 = BM25Okapi([tokenize(text) for text in texts])

    def rank(self, query: str) -> list[int]:
        terms = tokenize(query)
        if not terms:
            return list(range(self._bm25.corpus_size))
        return _descending(np.asarray(self._bm25.get_scores(terms)))


class DenseRanker:
    """Cosine similarity of normalized embeddings (the query is embedded at ranking time)."""

    def __init__(self, texts: Sequence[str], encode: Callable[[Sequence[str]], np.ndarray]) -> None:
        self._encode = encode
        self._matrix = _normalized(encode(list(texts)))

    def rank(self, query: str) -> list[int]:
        vector = _normalized(self._encode([query]))[0]
        return _descending(self._matrix @ vector)


def _normalized(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms == 0, 1.0, norms)


def run_baseline(
    ranker: BM25Ranker | DenseRanker, sample: Sample, questions: Sequence[Question]
) -> list[Outcome]:
    token_counts = [count_tokens(turn.text) for turn in sample.turns]
    outcomes = []
    for question in questions:
        started = time.perf_counter()
        ranked = ranker.rank(question.question)
        latency_ms = (time.perf_counter() - started) * 1000
        sources = [[sample.turns[i].dia_id] for i in ranked]
        budget = [[sample.turns[i].dia_id] for i in take_within_budget(ranked, token_counts)]
        outcomes.append(Outcome(question.category, score_question(question, sources, budget), latency_ms))
    return outcomes


# ── tempr through the API ────────────────────────────────────────────────────────────────


class RecallUnavailable(RuntimeError):
    """The server cannot answer recall for this system (no endpoint, unknown preset, ...)."""


def recall_endpoint_exists(client: httpx.Client) -> bool:
    response = client.get("/openapi.json")
    response.raise_for_status()
    return RECALL_PATH in response.json().get("paths", {})


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
    token = None
    for offset in range(0, len(sample.items), BATCH_SIZE):
        batch = sample.items[offset : offset + BATCH_SIZE]
        response = client.post(
            f"/v1/banks/{sample.bank}/memories",
            json={"items": [item.model_dump(mode="json", exclude_defaults=True) for item in batch]},
        )
        if response.status_code != 202:
            raise RuntimeError(f"retain into {sample.bank} failed: {response.status_code} {response.text}")
        token = response.json()["consistency"]["token"]
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
        "last_token": token,
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
        sources = [result.get("source_message_ids") or [] for result in results]
        outcomes.append(Outcome(question.category, score_question(question, sources, sources), latency_ms))
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
    if "bm25" in run.systems:
        run.add("bm25", run_baseline(BM25Ranker([t.text for t in sample.turns]), sample, questions))
    if "dense" in run.systems:
        from tempr.inference.embeddings import get_embedder

        embedder = get_embedder(PACKAGED_EMBEDDING_MODEL)
        started = time.perf_counter()
        ranker = DenseRanker([t.text for t in sample.turns], embedder.encode)
        run.timings["dense_corpus_encode_s"] = run.timings.get("dense_corpus_encode_s", 0.0) + (
            time.perf_counter() - started
        )
        run.add("dense", run_baseline(ranker, sample, questions))


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
    """A client of the server under test, or None when no tempr system can run."""
    if not any(s in TEMPR_PRESETS for s in run.systems):
        return None
    base_url = stack.enter_context(running_server(url))
    client = stack.enter_context(httpx.Client(base_url=base_url, timeout=120))
    if not recall_endpoint_exists(client):
        message = f"the server has no POST {RECALL_PATH} yet"
        run.unavailable.update({s: message for s in TEMPR_PRESETS if s in run.systems})
        console.print(f"[yellow]tempr systems skipped: {message}[/yellow]")
        return None
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
            if client is None or all(s in run.unavailable for s in TEMPR_PRESETS if s in run.systems):
                continue
            if reuse_banks and already_ingested(client, sample):
                console.print(f"  reusing {sample.bank}")
            else:
                console.print(f"  ingesting into {sample.bank}")
                stats = run.ingest[sample.stem] = ingest(client, sample)
                console.print(f"  {stats['facts']} facts in {stats['seconds']:.1f}s")
            _run_tempr_systems(run, client, sample, questions)


def build_report(run: Run, samples: Sequence[Sample], limit: int | None, url: str | None) -> dict[str, Any]:
    questions = sum(len(s.questions[:limit] if limit else s.questions) for s in samples)
    return {
        "systems": {
            system: aggregate(run.outcomes[system]) for system in run.systems if system in run.outcomes
        },
        "meta": {
            "date": datetime.now(UTC).isoformat(timespec="seconds"),
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
    columns = ["R@5", "R@10", "R@20", "R@budget"]
    rows = [
        [
            name,
            *(s["overall"][k] for k in ("recall@5", "recall@10", "recall@20", "recall@budget")),
            f"{s['overall']['latency_ms_p50']:.1f}",
            f"{s['overall']['latency_ms_p95']:.1f}",
            s["overall"]["n"],
        ]
        for name, s in systems.items()
    ]
    print_table(
        f"LoCoMo evidence recall ({report['meta']['questions']} questions)",
        ["system", *columns, "p50 ms", "p95 ms", "n"],
        rows,
    )
    print_table(
        "recall@10 by category",
        ["system", *(f"{c} {CATEGORY_NAMES[c]}" for c in CATEGORIES)],
        [[name, *(s["by_category"][c]["recall@10"] for c in CATEGORIES)] for name, s in systems.items()],
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

    samples = [load_sample(path) for path in conversation_paths(args.conversations)]
    run = Run(systems=args.systems)
    started = time.perf_counter()
    evaluate(run, samples, args.url, args.limit_questions, reuse_banks=args.reuse_banks)
    run.timings["total_s"] = time.perf_counter() - started
    report = build_report(run, samples, args.limit_questions, args.url)
    print_report(report)
    write_json(args.json, report)


if __name__ == "__main__":
    main()
