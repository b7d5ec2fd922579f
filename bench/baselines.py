"""Baselines over the raw turns of a conversation: BM25, dense, and a hybrid of both.

A raw-turn store keeps each turn with its date, so every baseline turn is
``"[8 May 2023] Caroline: ..."``. The hybrid fuses, by reciprocal rank (k = 60), BM25 and
dense over each turn and over each turn with its neighbours (±1, same session): a turn
whose neighbours hold the question's words ranks up, as in a chunked transcript store.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from datetime import datetime

import numpy as np

__all__ = [
    "RRF_K",
    "BM25Ranker",
    "DenseRanker",
    "HybridRanker",
    "Ranker",
    "dated",
    "neighbour_windows",
    "rrf",
    "tokenize",
]

RRF_K = 60
_TOKEN = re.compile(r"[a-z0-9]+")
_SESSION = re.compile(r"^D(\d+):")

Encode = Callable[[Sequence[str]], np.ndarray]


def _stop_words() -> frozenset[str]:
    """spaCy's English list (a dependency already). scikit-learn's list also drops content
    words ("find", "fire", "move", "last", ...) and costs BM25 about 0.04 of recall@10 here."""
    from spacy.lang.en.stop_words import STOP_WORDS as SPACY_STOP_WORDS

    return frozenset(SPACY_STOP_WORDS)


STOP_WORDS = _stop_words()


def tokenize(text: str) -> list[str]:
    """Lowercase, alphanumeric runs, English stop words removed."""
    return [token for token in _TOKEN.findall(text.lower()) if token not in STOP_WORDS]


def dated(when: datetime, speaker: str | None, text: str) -> str:
    """``"[8 May 2023] Caroline: text"``: a turn as a raw-turn store keeps it."""
    who = f"{speaker}: " if speaker else ""
    return f"[{when.day} {when:%B %Y}] {who}{text}"


def neighbour_windows(texts: Sequence[str], dia_ids: Sequence[str]) -> list[str]:
    """Each turn with the turns before and after it in the same session, one per line."""

    def session(i: int) -> str | None:
        m = _SESSION.match(dia_ids[i])
        return m.group(1) if m else None

    windows = []
    for i, text in enumerate(texts):
        parts = [texts[j] for j in (i - 1,) if j >= 0 and session(j) == session(i)]
        parts.append(text)
        parts += [texts[j] for j in (i + 1,) if j < len(texts) and session(j) == session(i)]
        windows.append("\n".join(parts))
    return windows


def _descending(scores: np.ndarray) -> list[int]:
    """Indices by score, highest first; ties keep corpus order."""
    return [int(i) for i in np.argsort(-scores, kind="stable")]


def _normalized(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms == 0, 1.0, norms)


class BM25Ranker:
    """Okapi BM25 (rank-bm25, k1 = 1.5, b = 0.75) over tokenized texts."""

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

    def __init__(self, texts: Sequence[str], encode: Encode) -> None:
        self._encode = encode
        self._matrix = _normalized(encode(list(texts)))

    def rank(self, query: str) -> list[int]:
        vector = _normalized(self._encode([query]))[0]
        return _descending(self._matrix @ vector)


def rrf(rankings: Sequence[Sequence[int]], k: int = RRF_K) -> list[int]:
    """Reciprocal rank fusion of rankings of the same items; ties keep the lower index."""
    scores: dict[int, float] = {}
    for ranking in rankings:
        for rank, index in enumerate(ranking, start=1):
            scores[index] = scores.get(index, 0.0) + 1.0 / (k + rank)
    return sorted(scores, key=lambda i: (-scores[i], i))


class HybridRanker:
    """RRF of BM25 and dense, each over the turns and over the turns with neighbours."""

    def __init__(self, texts: Sequence[str], dia_ids: Sequence[str], encode: Encode) -> None:
        windows = neighbour_windows(texts, dia_ids)
        self._rankers: list[BM25Ranker | DenseRanker] = [
            BM25Ranker(texts),
            DenseRanker(texts, encode),
            BM25Ranker(windows),
            DenseRanker(windows, encode),
        ]

    def rank(self, query: str) -> list[int]:
        return rrf([ranker.rank(query) for ranker in self._rankers])


Ranker = BM25Ranker | DenseRanker | HybridRanker
