"""Where a question's evidence turns end up in tempr's ranking, and why the missed ones miss.

For each question of one category (default 1, multi-hop) of kept banks, one recall through
the API as `bench.locomo_retrieval` makes it (budget mid, 4,096 tokens, the last session's
date as the query time), with the trace. Each evidence turn is placed in the first bucket
that holds it:

1. among the first 10 distinct turns cited (an Rt@10 hit);
2. turns 11-20; 3. turns 21-50; 4. further down the results;
5. not in the results, but a fact citing it is in an arm's traced top 100;
6. cited by a fact of the bank that no arm's top 100 holds;
7. cited by no fact of the bank (extraction lost it).

For the missed turns (2-7): the best rank among the facts citing the turn in the semantic
and the keyword arm (the trace lists each arm's top 100), and whether the turn's session
(the fact's conversation id) is one the top 10 turns come from at all.

    python -m bench.evidence_misses --url URL [--data DIR] [--category 1] [--json PATH]
"""

from __future__ import annotations

import argparse
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import httpx

from bench.common import console, print_table, write_json
from bench.kept_banks import add_kept_bank_args, over_kept_banks
from bench.locomo_data import CATEGORY_NAMES, Sample
from bench.locomo_score import MAX_TOKENS
from bench.scoring import turns_in_rank_order

__all__ = ["BUCKETS", "Placement", "arm_rank_band", "place_turn", "summarize_placements"]

BUCKETS = (
    "top 10 turns",
    "turns 11-20",
    "turns 21-50",
    "turns > 50",
    "an arm's top 100, not in the results",
    "in the bank, in no arm's top 100",
    "cited by no fact",
)
MISSED = BUCKETS[1:]
_ARM_BANDS = ("1-10", "11-50", "51-100", "not in its top 100")


@dataclass(frozen=True)
class Placement:
    """One evidence turn: its bucket, and for a missed one its arms' best ranks and whether
    the top 10 turns come from its session at all."""

    bucket: str
    semantic: str | None = None
    keyword: str | None = None
    session_in_top10: bool | None = None


def arm_rank_band(rank: int | None) -> str:
    if rank is None:
        return _ARM_BANDS[-1]
    return "1-10" if rank <= 10 else "11-50" if rank <= 50 else "51-100" if rank <= 100 else _ARM_BANDS[-1]


def _best_rank(turn: str, ranked_ids: Sequence[str], sources: Mapping[str, Sequence[str]]) -> int | None:
    """The 1-based rank of the first id in ``ranked_ids`` whose fact cites ``turn``."""
    for rank, unit_id in enumerate(ranked_ids, start=1):
        if turn in sources.get(unit_id, ()):
            return rank
    return None


def place_turn(
    turn: str,
    result_sources: Sequence[Sequence[str]],
    arm_ids: Mapping[str, Sequence[str]],
    sources: Mapping[str, Sequence[str]],
    session_of: Mapping[str, str],
) -> Placement:
    """Where ``turn`` is: ``result_sources`` the results' cited turns in rank order,
    ``arm_ids`` each arm's traced candidates in rank order, ``sources`` every fact of the bank
    by id, ``session_of`` each turn's session."""
    order = turns_in_rank_order(result_sources, len({t for s in result_sources for t in s}))
    if turn in order[:10]:
        return Placement(BUCKETS[0])
    semantic = arm_rank_band(_best_rank(turn, arm_ids.get("semantic", ()), sources))
    keyword = arm_rank_band(_best_rank(turn, arm_ids.get("keyword", ()), sources))
    session = session_of.get(turn)
    in_top = session is not None and session in {session_of.get(t) for t in order[:10]}
    if turn in order:
        position = order.index(turn) + 1
        bucket = BUCKETS[1] if position <= 20 else BUCKETS[2] if position <= 50 else BUCKETS[3]
    elif any(_best_rank(turn, ids, sources) is not None for ids in arm_ids.values()):
        bucket = BUCKETS[4]
    elif any(turn in cited for cited in sources.values()):
        bucket = BUCKETS[5]
    else:
        bucket = BUCKETS[6]
    return Placement(bucket, semantic, keyword, in_top)


def summarize_placements(placements: Iterable[Placement]) -> dict[str, Any]:
    """Counts and shares of the buckets over every turn, and of the arm bands and the session
    test over the missed ones."""
    placed = list(placements)
    missed = [p for p in placed if p.bucket != BUCKETS[0]]
    n, m = len(placed), len(missed)

    def shares(counts: Counter[str], total: int, keys: Sequence[str]) -> dict[str, dict[str, float]]:
        return {k: {"n": counts[k], "share": counts[k] / total if total else 0.0} for k in keys}

    return {
        "turns": n,
        "missed": m,
        "buckets": shares(Counter(p.bucket for p in placed), n, BUCKETS),
        "missed_semantic": shares(Counter(p.semantic or "" for p in missed), m, _ARM_BANDS),
        "missed_keyword": shares(Counter(p.keyword or "" for p in missed), m, _ARM_BANDS),
        "missed_session_in_top10": sum(1 for p in missed if p.session_in_top10) / m if m else 0.0,
    }


def _bank_facts(client: httpx.Client, bank: str) -> tuple[dict[str, list[str]], dict[str, str]]:
    """Every fact's cited turns by id, and each turn's session (its fact's conversation id)."""
    sources: dict[str, list[str]] = {}
    session_of: dict[str, str] = {}
    offset = 0
    while True:
        page = client.get(f"/v1/banks/{bank}/memories", params={"limit": 1000, "offset": offset}).json()
        for item in page["items"]:
            sources[item["id"]] = list(item.get("source_message_ids") or ())
            for turn in sources[item["id"]]:
                session_of.setdefault(turn, item.get("conversation_id") or "")
        offset += len(page["items"])
        if not page["items"] or offset >= page["total"]:
            return sources, session_of


def run(client: httpx.Client, sample: Sample, category: str, preset: str) -> list[Placement]:
    sources, session_of = _bank_facts(client, sample.bank)
    placements = []
    for question in (q for q in sample.questions if q.category == category):
        body = {
            "query": question.question,
            "budget": "mid",
            "max_tokens": MAX_TOKENS,
            "query_timestamp": sample.query_timestamp.isoformat(),
            "preset": preset,
            "trace": True,
        }
        response = client.post(f"/v1/banks/{sample.bank}/recall", json=body)
        response.raise_for_status()
        answer = response.json()
        result_sources = [r.get("source_message_ids") or () for r in answer["results"]]
        arm_ids = {
            arm: [c["id"] for c in traced["candidates"]] for arm, traced in answer["trace"]["arms"].items()
        }
        placements += [place_turn(t, result_sources, arm_ids, sources, session_of) for t in question.evidence]
    return placements


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    add_kept_bank_args(parser)
    parser.add_argument("--category", default="1", choices=sorted(CATEGORY_NAMES))
    args = parser.parse_args(argv)

    placements = over_kept_banks(
        args, lambda client, sample: run(client, sample, args.category, args.preset), "evidence turns"
    )
    summary = summarize_placements(placements)
    title = f"{CATEGORY_NAMES[args.category]}: {summary['turns']} evidence turns"
    for key, label in (
        ("buckets", title),
        ("missed_semantic", "missed, best semantic-arm rank"),
        ("missed_keyword", "missed, best keyword-arm rank"),
    ):
        rows = [[k, v["n"], v["share"]] for k, v in summary[key].items()]
        print_table(label, ["where", "turns", "share"], rows)
    console.print(
        f"missed turns from a session the top 10 turns come from: {summary['missed_session_in_top10']:.3f}"
    )
    write_json(
        args.json, summary | {"category": args.category, "preset": args.preset, "data": str(args.data)}
    )


if __name__ == "__main__":
    main()
