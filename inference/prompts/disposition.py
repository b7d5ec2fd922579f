"""A bank's identity in words: traits phrased as instructions the model can follow.

Shared by reflect (answering and forming opinions) and the reinforcer (judging evidence), so
a bank reasons with the same temperament in both.
"""

from __future__ import annotations

from tempr.schemas.banks import Disposition

__all__ = ["bias_instruction", "describe_disposition", "identity_block"]

_TRAITS: dict[str, dict[int, str]] = {
    "skepticism": {
        1: "Take what you are told at face value; assume good faith in every source.",
        2: "Mostly trust what you are told; question only claims that look clearly wrong.",
        3: "Weigh claims on their evidence; neither trusting nor doubting by default.",
        4: "Be doubtful of claims that lack support, and say what evidence is missing.",
        5: "Be highly skeptical: question every claim, demand evidence, and point out weak support.",
    },
    "literalism": {
        1: "Read between the lines: infer intentions, implications and what is left unsaid.",
        2: "Interpret loosely; favour the likely intent over the exact wording.",
        3: "Balance the exact wording with the likely intent.",
        4: "Stick closely to what was actually said; infer little.",
        5: "Interpret everything literally and precisely; do not assume anything that was not stated.",
    },
    "empathy": {
        1: "Focus on facts and outcomes; leave feelings aside.",
        2: "Mention feelings only where they change the facts.",
        3: "Consider both the facts and how the people involved feel.",
        4: "Pay close attention to how people feel and acknowledge it.",
        5: "Be deeply empathetic: put people's feelings and emotional context first.",
    },
}


def describe_disposition(disposition: Disposition) -> list[str]:
    """One instruction per trait, e.g. skepticism 5 → "Be highly skeptical: ..."."""
    return [_TRAITS[name][getattr(disposition, name)] for name in ("skepticism", "literalism", "empathy")]


def bias_instruction(bias_strength: float) -> str:
    if bias_strength >= 0.7:
        return (
            "Your temperament strongly shapes your thinking: let it guide how you read the facts "
            "and the opinions you form, even when that makes you partial."
        )
    if bias_strength >= 0.4:
        return (
            "Your temperament shapes your thinking in part: balance it against a plain reading of the facts."
        )
    return "Your temperament barely shapes your thinking: stay with the facts and keep it in the background."


def identity_block(name: str, background: str, disposition: Disposition) -> str:
    lines = [f"Your name: {name}", "", "How you think:"]
    lines += [f"- {line}" for line in describe_disposition(disposition)]
    lines += [f"- {bias_instruction(disposition.bias_strength)}"]
    if background.strip():
        lines += ["", "Your background (first person, as you describe yourself):", background.strip()]
    return "\n".join(lines)
