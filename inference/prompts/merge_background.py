"""Background merging: fold new first-person information into a bank's background."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["PROMPT_VERSION", "MergedBackground", "build_messages"]

PROMPT_VERSION = "merge_background/1"


class MergedBackground(BaseModel):
    model_config = ConfigDict(extra="ignore")

    background: str = Field(min_length=1)


_SYSTEM = """\
You maintain the background of an AI agent: a short first-person text about who it is. Merge \
the new information into the current background:
- where they contradict each other, the new information wins and the old statement goes;
- keep everything else from both;
- write in the first person ("I ..."), turning "you are" into "I am";
- be concise: no repetition, under 1000 characters when the content allows.
Answer with JSON: {"background": "<the merged text>"}."""


def build_messages(current: str, new: str) -> tuple[str, str]:
    return _SYSTEM, f"Current background:\n{current.strip() or '(empty)'}\n\nNew information:\n{new.strip()}"
