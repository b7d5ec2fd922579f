"""Whether a question asks about now: when recency is evidence.

Recency ranks a memory by when the bank last learned of it. That is the right prior for a
question about the present or the recent past ("Where does Dana live now?", "What did Mel
paint recently?"), where a later memory supersedes an earlier one. For any other question it
is no evidence: "What did Caroline do at the support group?" is as likely answered in a
conversation's first month as in its last, yet a ±10 % recency factor over a year puts 20 %
between them. The marker is read from the surface, from a closed class of English time words,
not from any set of questions.
"""

from __future__ import annotations

import re

from tempr.recall_api.recall.config import RecallConfig

__all__ = ["asks_about_now", "with_recency_for"]

_NOW = re.compile(
    r"\b(?:now|nowadays|currently|current|presently|still|anymore|any\s+more|latest|recent|recently"
    r"|lately|today|these\s+days|at\s+the\s+moment|at\s+present)\b",
    re.IGNORECASE,
)


def asks_about_now(query: str) -> bool:
    """Whether the question marks its time as the present or the recent past."""
    return _NOW.search(query) is not None


def with_recency_for(cfg: RecallConfig, query: str) -> RecallConfig:
    """``cfg`` with the recency weight this question calls for: `recency_alpha` when it asks
    about now, else `recency_alpha_unasked`."""
    if asks_about_now(query) or cfg.recency_alpha == cfg.recency_alpha_unasked:
        return cfg
    return cfg.model_copy(update={"recency_alpha": cfg.recency_alpha_unasked})
