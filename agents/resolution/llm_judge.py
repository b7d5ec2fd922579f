"""Borderline entity matches put to an LLM (only when one is configured)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from uuid import UUID

from tempr.agents.resolution.entities import KnownEntity, Resolution, normalize_name
from tempr.errors import UpstreamLLMError
from tempr.inference.llm import LLMClient
from tempr.inference.prompts.resolve_entity import SameEntityDecision, SameEntityInput, build_messages
from tempr.schemas.events import ExtractedFact

__all__ = ["PairKey", "judge_borderline", "pair_key"]

log = logging.getLogger(__name__)

PairKey = tuple[str, UUID]


def pair_key(resolution: Resolution, candidate: KnownEntity) -> PairKey:
    return normalize_name(resolution.surface), candidate.entity_id


async def judge_borderline(
    client: LLMClient,
    pairs: Sequence[tuple[Resolution, KnownEntity, ExtractedFact]],
    *,
    concurrency: int = 4,
) -> dict[PairKey, bool]:
    """One question per distinct (mention, candidate); a failed call leaves the rule's merge."""
    unique: dict[PairKey, tuple[Resolution, KnownEntity, ExtractedFact]] = {}
    for resolution, candidate, fact in pairs:
        unique.setdefault(pair_key(resolution, candidate), (resolution, candidate, fact))
    gate = asyncio.Semaphore(concurrency)

    async def ask(key: PairKey, resolution: Resolution, candidate: KnownEntity, fact: ExtractedFact) -> None:
        system, user = build_messages(
            SameEntityInput(
                mention=resolution.surface,
                mention_kind=resolution.kind,
                mention_context=fact.text,
                candidate=candidate.canonical_name,
                candidate_kind=candidate.kind,
                candidate_aliases=list(candidate.aliases),
                candidate_mentions=candidate.mention_count,
            )
        )
        try:
            async with gate:
                decision = await client.complete_structured(
                    system=system, user=user, response_model=SameEntityDecision, schema_name="same_entity"
                )
        except UpstreamLLMError as exc:
            log.warning("entity judgement failed, keeping the rule's merge: %s", exc)
            return
        decisions[key] = decision.same

    decisions: dict[PairKey, bool] = {}
    await asyncio.gather(*(ask(k, *v) for k, v in unique.items()))
    return decisions
