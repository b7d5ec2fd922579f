"""Where the answer's words are when tempr's A@N falls short, against the hybrid baseline.

For each scorable question of the kept banks, one recall through the API as
`bench.locomo_retrieval` makes it (budget mid, 4,096 tokens, the last session's date as the
query time), and hybrid's ranking of the raw turns. Both are packed into N tokens by the
bench's one rule. Reported per category:

- A@N of tempr and hybrid, and the questions each scores higher on;
- every gold content word tempr's packed texts lack, placed as "below the cut" (in what
  tempr packs into 4,096 tokens) or "not in 4,096 tokens", and whether hybrid's packed
  turns hold it;
- what-if: tempr's same ranking with each result's date as text, the way the baselines'
  turns carry their session date ("[9 June 2023] ..."; `mentioned_at`, the turn's time).

    python -m bench.answer_misses --url URL [--data DIR] [--budget 512] [--json PATH]
"""

from __future__ import annotations

import argparse
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import httpx

from bench.baselines import HybridRanker
from bench.baselines import dated as dated_turn
from bench.common import print_table, write_json
from bench.kept_banks import add_kept_bank_args, over_kept_banks
from bench.locomo_data import CATEGORY_NAMES, Sample
from bench.locomo_retrieval import recall_once, shared_encoder
from bench.locomo_score import MAX_TOKENS
from bench.scoring import answer_recall, content_words, content_words_of, pack
from tempr.inference.tokens import count_tokens

__all__ = ["PLACES", "QuestionOutcome", "dated", "judge", "place_missing_words", "summarize"]

PLACES = ("below the cut", "not in 4,096 tokens")


def dated(result: Mapping[str, Any]) -> str:
    """A result's text led by the day it was said, as a raw-turn store shows a turn."""
    said = result.get("mentioned_at")
    if not said:
        return str(result["text"])
    return dated_turn(datetime.fromisoformat(str(said).replace("Z", "+00:00")), None, str(result["text"]))


def place_missing_words(
    answer: str, packed: Iterable[str], deeper: Iterable[str], other: Iterable[str]
) -> Counter[tuple[str, bool]]:
    """The answer's content words missing from ``packed``, each counted by where it is:
    (a place of `PLACES`, whether ``other`` (the baseline's packed texts) holds it)."""
    have = content_words_of(packed)
    later = content_words_of(deeper)
    theirs = content_words_of(other)
    return Counter(
        (PLACES[0] if word in later else PLACES[1], word in theirs) for word in content_words(answer) - have
    )


@dataclass(frozen=True)
class QuestionOutcome:
    category: str
    tempr: float
    hybrid: float
    tempr_dated: float
    missing: Counter[tuple[str, bool]]


def _packed(texts: Sequence[str], budget: int, counts: Sequence[int] | None = None) -> list[str]:
    counts = counts if counts is not None else [count_tokens(t) for t in texts]
    return [texts[i] for i in pack(counts, budget)]


def judge(
    answer: str, category: str, results: Sequence[Mapping[str, Any]], hybrid: Sequence[str], budget: int
) -> QuestionOutcome | None:
    texts = [str(r["text"]) for r in results]
    counts = [count_tokens(t) for t in texts]  # packed twice: at the budget and at 4,096
    packed = _packed(texts, budget, counts)
    theirs = _packed(hybrid, budget)
    ours = answer_recall(answer, packed)
    if ours is None:
        return None
    return QuestionOutcome(
        category,
        ours,
        answer_recall(answer, theirs) or 0.0,
        answer_recall(answer, _packed([dated(r) for r in results], budget)) or 0.0,
        place_missing_words(answer, packed, _packed(texts, MAX_TOKENS, counts), theirs),
    )


def summarize(outcomes: Iterable[QuestionOutcome]) -> dict[str, dict[str, Any]]:
    """Per category and overall: the means, the questions won and lost against hybrid, and
    the missing words by place."""
    groups: dict[str, list[QuestionOutcome]] = defaultdict(list)
    for o in outcomes:
        groups[CATEGORY_NAMES.get(o.category, o.category)].append(o)
        groups["overall"].append(o)
    order = [*CATEGORY_NAMES.values(), "overall"]
    out: dict[str, dict[str, Any]] = {}
    for name, group in sorted(groups.items(), key=lambda g: order.index(g[0]) if g[0] in order else 0):
        n = len(group)
        missing: Counter[tuple[str, bool]] = sum((o.missing for o in group), Counter())
        out[name] = {
            "questions": n,
            "tempr": sum(o.tempr for o in group) / n,
            "hybrid": sum(o.hybrid for o in group) / n,
            "tempr_dated": sum(o.tempr_dated for o in group) / n,
            "tempr_higher": sum(o.tempr > o.hybrid for o in group),
            "hybrid_higher": sum(o.tempr < o.hybrid for o in group),
            "missing_words": {
                f"{place}, {'in' if held else 'not in'} hybrid's": missing[(place, held)]
                for place in PLACES
                for held in (True, False)
            },
        }
    return out


def run(client: httpx.Client, sample: Sample, budget: int, preset: str) -> list[QuestionOutcome]:
    texts = [t.text for t in sample.turns]
    hybrid = HybridRanker(texts, [t.dia_id for t in sample.turns], shared_encoder())
    outcomes = []
    for question in sample.questions:
        results, _ = recall_once(client, sample.bank, question.question, preset, sample.query_timestamp)
        ranked = [texts[i] for i in hybrid.rank(question.question)]
        judged = judge(question.answer, question.category, results, ranked, budget)
        if judged is not None:
            outcomes.append(judged)
    return outcomes


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    add_kept_bank_args(parser)
    parser.add_argument("--budget", type=int, default=512, help="tokens packed (default 512)")
    args = parser.parse_args(argv)

    outcomes = over_kept_banks(
        args, lambda client, sample: run(client, sample, args.budget, args.preset), "questions"
    )
    summary = summarize(outcomes)
    rows = [
        [
            name,
            s["questions"],
            s["tempr"],
            s["hybrid"],
            s["tempr_dated"],
            s["tempr_higher"],
            s["hybrid_higher"],
        ]
        for name, s in summary.items()
    ]
    columns = ["category", "questions", "tempr", "hybrid", "tempr, dated", "tempr higher", "hybrid higher"]
    print_table(f"A@{args.budget}", columns, rows, digits=3)
    words = [[name, *s["missing_words"].values()] for name, s in summary.items()]
    print_table(
        f"gold words missing from tempr's {args.budget} tokens",
        ["category", *next(iter(summary.values()))["missing_words"]],
        words,
    )
    write_json(
        args.json, {"budget": args.budget, "preset": args.preset, "data": str(args.data), "summary": summary}
    )


if __name__ == "__main__":
    main()
