"""Form fields to API models, and pydantic's complaints to one readable line."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError
from starlette.datastructures import FormData

from tempr.schemas.banks import BankIn

__all__ = ["bank_in", "describe", "optional_bool", "text_or_none"]


def describe(exc: ValidationError) -> str:
    """'field: message; …' naming each field the way the form does."""
    parts = []
    for err in exc.errors():
        field = ".".join(str(p) for p in err.get("loc", ()) if p not in ("body",)) or "input"
        parts.append(f"{field}: {err.get('msg', 'invalid')}")
    return "; ".join(parts)


def text_or_none(form: FormData, name: str) -> str | None:
    value = form.get(name)
    if not isinstance(value, str) or not value.strip():
        return None
    return value.strip()


def optional_bool(form: FormData, name: str) -> bool | None:
    """A three-way select: '' (the server's default), 'on', 'off'."""
    value = text_or_none(form, name)
    return None if value is None else value == "on"


def bank_in(form: FormData) -> BankIn:
    """The whole profile from the profile form (raises ValidationError)."""
    config: dict[str, Any] = {
        "reflect_budget": text_or_none(form, "reflect_budget"),
        "graph_retriever": text_or_none(form, "graph_retriever"),
        **{k: optional_bool(form, k) for k in ("form_opinions", "reinforce_opinions", "observations")},
    }
    return BankIn.model_validate(
        {
            "name": text_or_none(form, "name"),
            "background": form.get("background") or "",
            "disposition": {
                k: form.get(k)
                for k in ("skepticism", "literalism", "empathy", "bias_strength")
                if form.get(k)
            },
            "config": {k: v for k, v in config.items() if v is not None},
        }
    )
