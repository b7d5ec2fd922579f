"""Loading a bank's profile for a request, and background merging."""

from __future__ import annotations

import logging

import asyncpg

from tempr.errors import NotFound
from tempr.inference.llm import LLMClient
from tempr.inference.prompts import merge_background as merge_prompt
from tempr.schemas.banks import Bank
from tempr.store import banks
from tempr.store.banks import to_bank

__all__ = ["load_bank", "merge_background"]

log = logging.getLogger(__name__)


async def load_bank(conn: asyncpg.Connection | asyncpg.Pool, bank_id: str) -> Bank:
    row = await banks.get_bank(conn, bank_id)
    if row is None:
        raise NotFound(f"bank {bank_id!r} does not exist")
    return to_bank(row)


async def merge_background(llm: LLMClient | None, current: str, new: str) -> str:
    """With an LLM: one coherent first-person text, new information winning contradictions.
    Without one: the new text is appended (nothing is lost; contradictions stay visible)."""
    if not current.strip():
        return new.strip()
    if llm is None:
        return f"{current.rstrip()}\n{new.strip()}"
    system, user = merge_prompt.build_messages(current, new)
    merged = await llm.complete_structured(
        system=system, user=user, response_model=merge_prompt.MergedBackground, schema_name="merge_background"
    )
    return merged.background.strip()
