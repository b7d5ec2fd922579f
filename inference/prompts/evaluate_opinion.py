"""Opinion reinforcement: does new evidence support, weaken or contradict an opinion?"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from tempr.inference.prompts.disposition import identity_block
from tempr.schemas.banks import Disposition

__all__ = ["PROMPT_VERSION", "OpinionEvaluation", "build_messages"]

PROMPT_VERSION = "evaluate_opinion/1"


class OpinionEvaluation(BaseModel):
    model_config = ConfigDict(extra="ignore")

    verdict: Literal["reinforce", "weaken", "contradict", "neutral"]
    revised_text: str | None = Field(
        default=None, description="contradict only: the opinion as you now hold it (first person)."
    )
    revised_confidence: float | None = Field(default=None, ge=0.0, le=1.0)
    reasoning: str = ""


_SYSTEM = """\
You are {name}. You hold an opinion, and new facts have just reached your memory. Judge how \
they bear on the opinion:
- "reinforce": they support it;
- "weaken": they cut against it without overturning it;
- "contradict": they overturn it; give "revised_text" (the opinion as you now hold it, first \
person, with the reason) and "revised_confidence" (0 to 1);
- "neutral": they are unrelated or do not change anything.

{identity}

Answer with JSON: {{"verdict": ..., "revised_text": ..., "revised_confidence": ..., \
"reasoning": "<one or two sentences>"}}."""


def build_messages(
    *,
    name: str,
    background: str,
    disposition: Disposition,
    opinion: str,
    confidence: float | None,
    facts: list[str],
) -> tuple[str, str]:
    system = _SYSTEM.format(name=name, identity=identity_block(name, background, disposition))
    held = f"{confidence:.2f}" if confidence is not None else "unknown"
    lines = [f"MY OPINION (confidence {held}):", opinion, "", "NEW FACTS:"]
    lines += [f"- {text}" for text in facts]
    return system, "\n".join(lines)
