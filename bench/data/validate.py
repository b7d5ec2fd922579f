"""Check the held-out data: JSON loads, answer indexes and evidence ids are valid; print counts.

python bench/data/validate.py
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from datetime import datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
SESSION = re.compile(r"^session_(\d+)$")


def check_banks(path: Path) -> list[str]:
    errors: list[str] = []
    data = json.loads(path.read_text())
    banks = data["banks"]
    statements = questions = 0
    for bank in banks:
        person, texts = bank["person"], bank["statements"]
        datetime.fromisoformat(bank["timestamp"].replace("Z", "+00:00"))
        statements += len(texts)
        for q in bank["questions"]:
            questions += 1
            if not 0 <= q["answer_index"] < len(texts):
                errors.append(f"{person}: bad answer_index in {q['q']!r}")
            if person not in q["q"]:
                errors.append(f"{person}: question does not name the person: {q['q']!r}")
            if not q.get("answer"):
                errors.append(f"{person}: no gold answer for {q['q']!r}")
    print(f"{path.name}: {len(banks)} banks, {statements} statements, {questions} questions")
    return errors


def check_conversation(path: Path) -> list[str]:
    errors: list[str] = []
    data = json.loads(path.read_text())
    speakers = {data["speaker_a"], data["speaker_b"]}
    ids: set[str] = set()
    sessions = turns = 0
    previous = None
    for key in sorted((k for k in data if SESSION.match(k)), key=lambda k: int(k.split("_")[1])):
        number = int(SESSION.match(key).group(1))
        sessions += 1
        when = datetime.strptime(data[f"{key}_date_time"], "%I:%M %p on %d %B, %Y")
        if previous and when <= previous:
            errors.append(f"{key}: date not after the previous session")
        previous = when
        for position, turn in enumerate(data[key], 1):
            turns += 1
            if turn["dia_id"] != f"D{number}:{position}":
                errors.append(f"{key}: turn {position} has dia_id {turn['dia_id']}")
            if turn["speaker"] not in speakers:
                errors.append(f"{turn['dia_id']}: unknown speaker {turn['speaker']}")
            if not turn["text"].strip():
                errors.append(f"{turn['dia_id']}: empty text")
            ids.add(turn["dia_id"])
    categories = Counter()
    for qa in data["qa"]:
        categories[qa["category"]] += 1
        if qa["category"] not in (1, 2, 3, 4):
            errors.append(f"bad category in {qa['question']!r}")
        if not qa["evidence"]:
            errors.append(f"no evidence for {qa['question']!r}")
        for dia_id in qa["evidence"]:
            if dia_id not in ids:
                errors.append(f"unknown evidence {dia_id} in {qa['question']!r}")
        if not str(qa["answer"]).strip():
            errors.append(f"no answer for {qa['question']!r}")
    per = ", ".join(f"cat{c}={categories[c]}" for c in (1, 2, 3, 4))
    print(f"{path.name}: {sessions} sessions, {turns} turns, {len(data['qa'])} questions ({per})")
    return errors


def main() -> int:
    errors = check_banks(HERE / "small_banks.json")
    for path in sorted((HERE / "heldout").glob("*.json")):
        errors += check_conversation(path)
    for error in errors:
        print("ERROR", error)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
