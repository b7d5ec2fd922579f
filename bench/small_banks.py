"""Small personal banks: the first thing a new user sees.

Each person of `bench/data/small_banks.json` gets a bank of their own; every statement is
retained alone (its own request and conversation, a minute apart, spoken by the person),
and once all are materialized each question is recalled. A question is answered by one
statement; a result answers it when its sources cite that statement. Scored: P@1 (the first
result answers) and MRR (1 / rank of the first result that answers, 0 when none does), for
each recall preset, and for BM25 and dense (the same MiniLM) over the raw statements.

    python -m bench.small_banks [--url URL] [--presets default,graph,...] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import re
import time
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

from bench.baselines import BM25Ranker, DenseRanker, Ranker
from bench.common import REPO, console, print_table, running_server, wait_until_materialized, write_json
from tempr.settings import PACKAGED_EMBEDDING_MODEL

__all__ = ["Bank", "SmallQuestion", "load_banks", "main", "reciprocal_rank", "summarize_ranks"]

DATA = REPO / "bench" / "data" / "small_banks.json"
PRESETS = (
    "default",
    "graph",
    "no-temporal",
    "no-keyword",
    "no-rerank",
    "no-diversity",
    "no-passage",
    "no-name-blend",
    "semantic-only",
    "keyword-only",
)
BASELINES = ("bm25", "dense")


@dataclass(frozen=True)
class SmallQuestion:
    q: str
    answer_index: int
    answer: str


@dataclass(frozen=True)
class Bank:
    person: str
    timestamp: datetime
    statements: tuple[str, ...]
    questions: tuple[SmallQuestion, ...]

    @property
    def bank_id(self) -> str:
        ascii_name = unicodedata.normalize("NFKD", self.person).encode("ascii", "ignore").decode()
        return "small-" + re.sub(r"[^a-z0-9]+", "-", ascii_name.lower()).strip("-")

    def message_id(self, index: int) -> str:
        return f"s{index}"


def load_banks(path: Path = DATA) -> list[Bank]:
    data = json.loads(path.read_text())
    return [
        Bank(
            b["person"],
            datetime.fromisoformat(b["timestamp"].replace("Z", "+00:00")),
            tuple(b["statements"]),
            tuple(SmallQuestion(q["q"], int(q["answer_index"]), q.get("answer", "")) for q in b["questions"]),
        )
        for b in data["banks"]
    ]


def reciprocal_rank(ranked_sources: Iterable[Iterable[str]], answer: str) -> float:
    """1 / the rank of the first result citing ``answer``; 0 when none does."""
    for rank, sources in enumerate(ranked_sources, start=1):
        if answer in sources:
            return 1.0 / rank
    return 0.0


def summarize_ranks(reciprocal_ranks: Sequence[float]) -> dict[str, float]:
    """P@1 (share of first results that answer) and MRR."""
    n = len(reciprocal_ranks)
    return {
        "p_at_1": sum(1 for r in reciprocal_ranks if r == 1.0) / n if n else float("nan"),
        "mrr": sum(reciprocal_ranks) / n if n else float("nan"),
        "n": n,
    }


# ── tempr through the API ────────────────────────────────────────────────────────────────


def retain_alone(client: httpx.Client, bank: Bank) -> None:
    for index, statement in enumerate(bank.statements):
        item = {
            "content": statement,
            "speaker": bank.person,
            "timestamp": (bank.timestamp + timedelta(minutes=index)).isoformat(),
            "conversation_id": f"{bank.bank_id}-{index}",
            "message_id": bank.message_id(index),
        }
        response = client.post(f"/v1/banks/{bank.bank_id}/memories", json={"items": [item]})
        if response.status_code != 202:
            raise RuntimeError(f"retain into {bank.bank_id}: {response.status_code} {response.text}")


def recall_ranks(
    client: httpx.Client, bank: Bank, preset: str, latencies: list[float]
) -> list[tuple[float, dict[str, Any]]]:
    """Per question: its reciprocal rank and what came first (for the misses' listing)."""
    query_time = bank.timestamp + timedelta(minutes=len(bank.statements) + 1)
    out = []
    for question in bank.questions:
        body = {"query": question.q, "preset": preset, "query_timestamp": query_time.isoformat()}
        started = time.perf_counter()
        response = client.post(f"/v1/banks/{bank.bank_id}/recall", json=body)
        latencies.append((time.perf_counter() - started) * 1000)
        response.raise_for_status()
        results = response.json()["results"]
        rr = reciprocal_rank(
            (r["source_message_ids"] for r in results), bank.message_id(question.answer_index)
        )
        first = results[0]["text"] if results else None
        out.append((rr, {"bank": bank.person, "q": question.q, "first": first, "rr": rr}))
    return out


# ── baselines over the raw statements ────────────────────────────────────────────────────


def baseline_ranks(ranker_of: Any, banks: Sequence[Bank]) -> list[float]:
    ranks = []
    for bank in banks:
        ranker: Ranker = ranker_of(list(bank.statements))
        for question in bank.questions:
            order = ranker.rank(question.q)
            ranks.append(
                reciprocal_rank(([bank.message_id(i)] for i in order), bank.message_id(question.answer_index))
            )
    return ranks


def _baselines(banks: Sequence[Bank]) -> dict[str, dict[str, float]]:
    from tempr.inference.embeddings import get_embedder

    encode = get_embedder(PACKAGED_EMBEDDING_MODEL).encode
    return {
        "bm25": summarize_ranks(baseline_ranks(BM25Ranker, banks)),
        "dense": summarize_ranks(baseline_ranks(lambda texts: DenseRanker(texts, encode), banks)),
    }


# ── the run ──────────────────────────────────────────────────────────────────────────────


def run_presets(url: str | None, banks: Sequence[Bank], presets: Sequence[str]) -> dict[str, Any]:
    systems: dict[str, Any] = {}
    misses: dict[str, list[dict[str, Any]]] = {}
    with running_server(url) as base_url, httpx.Client(base_url=base_url, timeout=120) as client:
        started = time.perf_counter()
        for bank in banks:
            retain_alone(client, bank)
        wait_until_materialized(client)
        console.print(f"{len(banks)} banks retained in {time.perf_counter() - started:.1f}s")
        for preset in presets:
            latencies: list[float] = []
            scored = [pair for bank in banks for pair in recall_ranks(client, bank, preset, latencies)]
            systems[f"tempr {preset}"] = summarize_ranks([rr for rr, _ in scored]) | {
                "latency_ms_p50": sorted(latencies)[len(latencies) // 2]
            }
            misses[preset] = [detail for rr, detail in scored if rr < 1.0]
    return {"systems": systems, "misses": misses}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--data", type=Path, default=DATA, help=f"banks file (default {DATA})")
    parser.add_argument("--url", default=None, help="a running server (default: start the embedded one)")
    parser.add_argument("--presets", default=",".join(PRESETS), help=", ".join(PRESETS))
    parser.add_argument("--json", type=Path, default=None, help="write the results here")
    parser.add_argument("--show-misses", default="default", help="list the misses of this preset")
    args = parser.parse_args(argv)

    banks = load_banks(args.data)
    presets = [p.strip() for p in args.presets.split(",") if p.strip()]
    report = run_presets(args.url, banks, presets)
    report["systems"].update(_baselines(banks))
    report["meta"] = {
        "data": str(args.data),
        "banks": len(banks),
        "statements": sum(len(b.statements) for b in banks),
        "questions": sum(len(b.questions) for b in banks),
        "server": args.url or "embedded",
        "embedding_model": PACKAGED_EMBEDDING_MODEL,
    }
    for miss in report["misses"].get(args.show_misses, []):
        console.print(f"[dim]{miss['bank']}: {miss['q']} → {miss['first']} (rr {miss['rr']:.2f})[/dim]")
    print_table(
        f"Small banks: {report['meta']['banks']} people, {report['meta']['questions']} questions",
        ["system", "P@1", "MRR", "p50 ms", "n"],
        [
            [name, s["p_at_1"], s["mrr"], s.get("latency_ms_p50", float("nan")), s["n"]]
            for name, s in report["systems"].items()
        ],
    )
    write_json(args.json, report)


if __name__ == "__main__":
    main()
