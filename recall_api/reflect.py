"""Reflect: recall across every fact type, answer in the bank's voice, form opinions.

Opinions are not written here: they go to the log as a `FactsEvent` (tempr.facts.v1) and take
the same road as extracted facts (entity resolution, links, the materializer), so a replay of
the log rebuilds them and the reinforcer sees them like any other opinion.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import asyncpg
from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from tempr.errors import InvalidRequest
from tempr.inference.embeddings import Embedder
from tempr.inference.llm import LLMClient, track_usage
from tempr.inference.prompts import reflect as prompt
from tempr.inference.rerank import Reranker
from tempr.recall_api.recall.pipeline import run_recall
from tempr.schemas.banks import Bank
from tempr.schemas.events import EntityMention, ExtractedFact, FactsEvent
from tempr.schemas.ids import stable_id, text_key
from tempr.schemas.recall import RecallRequest, RecallResult
from tempr.schemas.reflect import BasedOn, LLMUsage, OpinionFormed, ReflectRequest, ReflectResponse
from tempr.streams.publisher import Publisher

__all__ = ["check_response_schema", "opinion_id", "run_reflect"]


def check_response_schema(schema: dict[str, Any] | None) -> Draft202012Validator | None:
    if schema is None:
        return None
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        raise InvalidRequest(f"response_schema is not a valid JSON schema: {exc.message}") from exc
    return Draft202012Validator(schema)


def opinion_id(bank_id: str, text: str) -> Any:
    # The same opinion formed twice (a retried reflect) is one opinion.
    return stable_id(bank_id, "opinion", text_key(text))


async def run_reflect(
    *,
    pool: asyncpg.Pool,
    embedder: Embedder,
    reranker: Reranker | None,
    llm: LLMClient,
    publisher: Publisher,
    bank: Bank,
    req: ReflectRequest,
    max_consistency_wait_s: float,
) -> ReflectResponse:
    validator = check_response_schema(req.response_schema)
    recalled = await run_recall(
        pool,
        embedder,
        reranker,
        bank.bank_id,
        RecallRequest(
            query=req.query,
            budget=req.budget or bank.config.reflect_budget or "mid",
            max_tokens=req.max_tokens,
            query_timestamp=req.query_timestamp,
            after=req.after,
        ),
        max_consistency_wait_s=max_consistency_wait_s,
    )
    shown = {i + 1: r for i, r in enumerate(recalled.results)}
    system, user = prompt.build_messages(
        name=bank.name,
        background=bank.background,
        disposition=bank.disposition,
        facts=[_prompt_fact(n, r) for n, r in shown.items()],
        query=req.query,
        context=req.context,
        structured=validator is not None,
    )

    def parse(text: str) -> prompt.ReflectOutput:
        out = prompt.ReflectOutput.model_validate_json(text)
        if validator is not None:
            error = next(iter(sorted(validator.iter_errors(out.answer), key=lambda e: list(e.path))), None)
            if error is not None:
                where = "/".join(str(p) for p in error.path) or "answer"
                raise ValueError(f"answer does not match response_schema at {where}: {error.message}")
        elif not isinstance(out.answer, str):
            raise ValueError("answer must be a string")
        return out

    with track_usage() as usage:
        out = await llm.complete_with_schema(
            system=system,
            user=user,
            schema=prompt.output_schema(req.response_schema),
            schema_name="reflect",
            parse=parse,
        )
    form = req.form_opinions if req.form_opinions is not None else bank.config.form_opinions is not False
    formed = _opinions(bank.bank_id, out, shown) if form else []
    if formed:
        await publisher.publish_facts(await _opinion_event(bank.bank_id, req.query, formed, shown, embedder))
    return ReflectResponse(
        bank_id=bank.bank_id,
        query=req.query,
        text=out.answer if isinstance(out.answer, str) else json.dumps(out.answer, ensure_ascii=False),
        structured=out.answer if validator is not None else None,
        based_on=[
            BasedOn(id=shown[n].id, fact_type=shown[n].fact_type, text=shown[n].text)  # type: ignore[arg-type]
            for n in dict.fromkeys(out.based_on)
            if n in shown
        ],
        opinions_formed=formed,
        usage=LLMUsage(
            prompt_tokens=sum(u.prompt_tokens for u in usage),
            completion_tokens=sum(u.completion_tokens for u in usage),
            total_tokens=sum(u.total_tokens for u in usage),
        ),
    )


def _prompt_fact(number: int, r: RecallResult) -> prompt.PromptFact:
    return prompt.PromptFact(
        number=number,
        fact_type=r.fact_type,
        text=r.text,
        when=r.occurred_start or r.mentioned_at,
        confidence=r.confidence,
        proof_count=r.proof_count,
    )


def _opinions(bank_id: str, out: prompt.ReflectOutput, shown: dict[int, RecallResult]) -> list[OpinionFormed]:
    formed: dict[Any, OpinionFormed] = {}
    for op in out.opinions:
        oid = opinion_id(bank_id, op.text)
        formed.setdefault(
            oid,
            OpinionFormed(
                id=oid,
                text=op.text.strip(),
                confidence=op.confidence,
                entities=list(dict.fromkeys(e.strip() for e in op.entities if e.strip())),
                based_on=[shown[n].id for n in dict.fromkeys(op.based_on) if n in shown],
            ),
        )
    return list(formed.values())


async def _opinion_event(
    bank_id: str,
    query: str,
    formed: list[OpinionFormed],
    shown: dict[int, RecallResult],
    embedder: Embedder,
) -> FactsEvent:
    by_id = {r.id: r for r in shown.values()}
    vectors = await embedder.aencode([o.text for o in formed])
    now = datetime.now(UTC)
    facts = [
        ExtractedFact(
            fact_id=o.id,
            text=o.text,
            fact_type="opinion",
            mentioned_at=now,
            confidence=o.confidence,
            entities=[EntityMention(name=e) for e in o.entities],
            source_message_ids=sorted({m for f in o.based_on for m in by_id[f].source_message_ids}),
            evidence_ids=o.based_on,
            metadata={"formed_by": "reflect", "query": query},
            embedding=[float(x) for x in vector],
        )
        for o, vector in zip(formed, vectors, strict=True)
    ]
    return FactsEvent(
        bank_id=bank_id,
        chunk_id=stable_id(bank_id, "reflect", *(o.id for o in formed)),
        chunk_text=f"reflect: {query}",
        message_event_ids=[],
        facts=facts,
    )
