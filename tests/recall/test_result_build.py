"""Results as recall builds them: what the API serializes, unset extras left out."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import numpy as np

from tempr.recall_api.recall import fusion
from tempr.recall_api.recall.pipeline import Scored
from tempr.recall_api.recall.results import build_result
from tempr.schemas.recall import RecallInclude, RecallResult


def _scored() -> Scored:
    cand = fusion.Candidate(uuid.uuid4(), {"semantic": 2, "keyword": 1}, fused_score=0.032)
    row = {
        "id": cand.unit_id,
        "text": "Caroline went to the support group.",
        "fact_type": "world",
        "occurred_start": datetime(2023, 5, 7, tzinfo=UTC),
        "occurred_end": None,
        "mentioned_at": datetime(2023, 5, 8, tzinfo=UTC),
        "confidence": None,
        "proof_count": 1,
        "tags": ["family"],
        "source_message_ids": ["conv-26:D1:3"],
        "chunk_id": None,
    }
    s = Scored(cand, row)  # type: ignore[arg-type]
    s.rerank, s.final = np.float64(0.71), np.float64(0.64)  # scores can come out of numpy
    return s


def test_a_built_result_serializes_as_a_validated_one() -> None:
    for include in (RecallInclude(), RecallInclude(entities=True, chunks=True)):
        built = build_result(_scored(), include)
        validated = RecallResult.model_validate(built.model_dump(exclude_unset=True))
        assert built.model_fields_set == validated.model_fields_set
        assert built.model_dump_json(exclude_unset=True) == validated.model_dump_json(exclude_unset=True)
        assert type(built.scores.final) is float
    plain = build_result(_scored(), RecallInclude()).model_dump(exclude_unset=True)
    assert "entities" not in plain and "chunk" not in plain
    assert plain["scores"] == {
        "rrf": 0.032,
        "rerank": 0.71,
        "final": 0.64,
        "arms": {"semantic": 2, "keyword": 1},
    }
