"""Recall's rerank stage: candidates shown to the reranker with their dates, scores normalized.

Without a reranker the fused (RRF) scores become synthetic scores, so the later boosts still
act on a meaningful base. The reranker itself (local cross-encoder or a `/rerank` endpoint) is
`tempr.inference.rerank`; this module is what recall makes of it.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from tempr.inference.rerank import Reranker
from tempr.recall_api.recall.scoring import sigmoid_normalize, synthetic_scores, synthetic_scores_from_fused

__all__ = ["format_candidate", "normalize_scores", "rerank_scores"]


def format_candidate(text: str, when: datetime | None) -> str:
    """``"[June 5, 2023] text"``; undated facts go in as they are."""
    if when is None:
        return text
    return f"[{when:%B} {when.day}, {when.year}] {text}"


def normalize_scores(raw: Sequence[float]) -> list[float]:
    """Scores of one query's candidates in [0, 1]: kept if all already are, else sigmoid."""
    return sigmoid_normalize(raw)


async def rerank_scores(
    reranker: Reranker | None,
    query: str,
    documents: Sequence[str],
    fused: Sequence[float] | None = None,
) -> tuple[list[float], str]:
    """Normalized relevance for rank-ordered documents, and how it was obtained.

    Without a reranker the fused (RRF) scores become synthetic scores over [0.1, 1.0], so
    the later multiplicative boosts still act on a meaningful base (by rank alone when the
    fused scores are not given).
    """
    if reranker is None:
        if fused is not None:
            return synthetic_scores_from_fused(fused), "synthetic"
        return synthetic_scores(len(documents)), "synthetic"
    raw = await reranker.ascore(query, documents)
    return normalize_scores(raw), reranker.method
