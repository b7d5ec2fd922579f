"""The Python client's banks, opinions and reflect calls against the live API (no LLM there)."""

from __future__ import annotations

import uuid

import httpx
import pytest

from tempr.client import AsyncTemprClient, TemprAPIError, TemprClient
from tempr.schemas.banks import BankIn, Disposition

pytestmark = pytest.mark.integration


def test_sync_client_manages_a_banks_profile(api: httpx.Client, bank: str) -> None:
    with TemprClient(str(api.base_url)) as tempr:
        with pytest.raises(TemprAPIError) as unknown:
            tempr.bank(bank)
        assert unknown.value.status_code == 404 and bank in str(unknown.value.detail)

        created = tempr.put_bank(
            bank, BankIn(background="I am a ship's navigator.", disposition=Disposition(skepticism=5))
        )
        assert created.bank_id == bank and created.name == bank  # the name defaults to the id
        assert created.disposition.skepticism == 5 and created.disposition.empathy == 3

        patched = tempr.patch_bank(bank, name="Ada", disposition={"empathy": 1})
        assert patched.name == "Ada"
        assert (patched.disposition.skepticism, patched.disposition.empathy) == (5, 1)
        assert patched.background == "I am a ship's navigator."

        assert tempr.bank(bank).name == "Ada"
        assert bank in [b.bank_id for b in tempr.banks(limit=1000).items]

        replaced = tempr.put_bank(bank, background="I keep a lighthouse.")
        assert (replaced.name, replaced.background, replaced.disposition.skepticism) == (
            bank,
            "I keep a lighthouse.",
            3,
        )

        opinions = tempr.opinions(bank)
        assert opinions.bank_id == bank and opinions.total == 0 and opinions.items == []
        with pytest.raises(TemprAPIError) as no_opinion:
            tempr.opinion(bank, uuid.uuid4())
        assert no_opinion.value.status_code == 404

        deleted = tempr.delete_bank(bank)
        assert deleted.bank_id == bank and isinstance(deleted.deleted, dict)
        with pytest.raises(TemprAPIError) as gone:
            tempr.delete_bank(bank)
        assert gone.value.status_code == 404


def test_a_profile_is_validated_before_it_is_sent(api: httpx.Client, bank: str) -> None:
    with TemprClient(str(api.base_url)) as tempr, pytest.raises(ValueError, match="skepticism"):
        tempr.put_bank(bank, disposition={"skepticism": 9})


def test_reflect_without_an_llm_raises_the_servers_message(api: httpx.Client, bank: str) -> None:
    with TemprClient(str(api.base_url), backoff_s=0.01) as tempr:
        tempr.put_bank(bank, background="I remember things.")
        with pytest.raises(TemprAPIError) as no_llm:
            tempr.reflect(bank, "What do I think of Lisbon?", budget="low", context="just curious")
    assert no_llm.value.status_code == 501
    assert "no LLM is configured" in str(no_llm.value.detail)


async def test_async_client_has_the_banks_surface(api: httpx.Client, bank: str) -> None:
    async with AsyncTemprClient(str(api.base_url), backoff_s=0.01) as tempr:
        created = await tempr.put_bank(bank, {"name": "Omar", "background": "I play the oud."})
        assert created.name == "Omar"
        assert (
            await tempr.patch_bank(bank, disposition={"bias_strength": 0.9})
        ).disposition.bias_strength == 0.9
        assert (await tempr.bank(bank)).background == "I play the oud."
        assert any(b.bank_id == bank for b in (await tempr.banks(limit=1000)).items)
        assert (await tempr.opinions(bank)).total == 0
        with pytest.raises(TemprAPIError) as no_llm:
            await tempr.reflect(bank, "Who am I?")
        assert no_llm.value.status_code == 501
        assert (await tempr.delete_bank(bank)).bank_id == bank
        with pytest.raises(TemprAPIError) as gone:
            await tempr.bank(bank)
        assert gone.value.status_code == 404
