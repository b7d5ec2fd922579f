"""Traits become instructions; reflect's envelope schema follows the caller's schema."""

from __future__ import annotations

import itertools

from tempr.inference.prompts.disposition import bias_instruction, describe_disposition, identity_block
from tempr.inference.prompts.reflect import PromptFact, build_messages, output_schema
from tempr.schemas.banks import Disposition


def test_every_trait_level_reads_differently() -> None:
    seen = set()
    for s, lit, e in itertools.product(range(1, 6), repeat=3):
        lines = describe_disposition(Disposition(skepticism=s, literalism=lit, empathy=e))
        assert len(lines) == 3
        seen.add(tuple(lines))
    assert len(seen) == 125


def test_extremes_say_opposite_things() -> None:
    low = " ".join(describe_disposition(Disposition(skepticism=1, literalism=1, empathy=1)))
    high = " ".join(describe_disposition(Disposition(skepticism=5, literalism=5, empathy=5)))
    assert "face value" in low and "highly skeptical" in high
    assert "between the lines" in low and "literally" in high
    assert "leave feelings aside" in low and "deeply empathetic" in high


def test_bias_strength_has_three_registers() -> None:
    assert "strongly" in bias_instruction(0.9)
    assert "in part" in bias_instruction(0.5)
    assert "barely" in bias_instruction(0.1)
    assert bias_instruction(0.7) == bias_instruction(1.0) and bias_instruction(0.4) == bias_instruction(0.69)


def test_identity_block_omits_an_empty_background() -> None:
    assert "background" not in identity_block("Ada", "  ", Disposition())
    assert "I sail." in identity_block("Ada", "I sail.", Disposition())


def test_reflect_prompt_groups_memories_and_shows_confidence() -> None:
    facts = [
        PromptFact(1, "world", "Paris is in France.", None, None, 1),
        PromptFact(2, "opinion", "I like Paris.", None, 0.8, 1),
        PromptFact(3, "observation", "Ada travels often.", None, None, 5),
    ]
    system, user = build_messages(
        name="Ada",
        background="",
        disposition=Disposition(),
        facts=facts,
        query="Where next?",
        context="planning a trip",
        structured=False,
    )
    assert "You are Ada" in system and "plain text" in system
    assert user.index("WHAT I KNOW ABOUT THE WORLD") < user.index("[1] Paris is in France.")
    assert "[2] I like Paris. (confidence 0.80)" in user
    assert "[3] Ada travels often. (backed by 5 facts)" in user
    assert user.endswith("QUESTION: Where next?") and "planning a trip" in user


def test_output_schema_embeds_the_response_schema() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    assert output_schema(schema)["properties"]["answer"] == schema
    assert output_schema(None)["properties"]["answer"] == {"type": "string"}
    assert set(output_schema(None)["required"]) == {"answer", "based_on", "opinions"}
