"""What the local extractor costs per fact, chunk by chunk against chunks extracted together.

    python -m bench.extract_batching [--conversation conv-26] [--passes 5] [--json PATH]

A LoCoMo conversation is cut as the segmenter cuts it (8 turns a chunk), each chunk read with
its journal history, and extracted two ways in one process, alternating pass by pass:
- `one by one`: `extract_local` per chunk, one spaCy pass each (the extractor before stop 17);
- `coalesced`: the extract stage's batch as the Coalescer groups it (8 chunks in flight: the
  first alone, the 7 that queued behind it together), `extract_local_many` per group.
Reported: CPU ms of this thread per fact (the load of other processes moves wall time far more
than CPU time), and whether both give the same facts (ids, texts, entities, dates).
"""

from __future__ import annotations

import argparse
import statistics
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench.common import print_table, write_json
from bench.locomo_data import DATA_DIR, load_sample
from tempr.agents.extraction.entities import get_nlp
from tempr.agents.extraction.local import SPEAKER_WINDOW, extract_local, extract_local_many
from tempr.schemas.events import ChunkEvent, ExtractedFact, MessageEvent

__all__ = ["main"]

CHUNK_TURNS = 8  # Settings.chunk_max_turns
IN_FLIGHT = 8  # Settings.llm_concurrency: chunks of a batch extracting at once

Job = tuple[ChunkEvent, Sequence[MessageEvent] | None]


def _jobs(conversation: str) -> list[Job]:
    sample = load_sample(DATA_DIR / f"{conversation}.json")
    bank = "bench-extract"
    by_conversation: dict[str, list[MessageEvent]] = {}
    for item in sample.items:
        conv = item.conversation_id or conversation
        by_conversation.setdefault(conv, []).append(
            MessageEvent(
                event_id=uuid.uuid5(uuid.NAMESPACE_URL, f"{conv}/{item.message_id}"),
                bank_id=bank,
                message_id=item.message_id or "",
                content=item.content,
                speaker=item.speaker,
                timestamp=item.timestamp,
                conversation_id=conv,
                received_at=item.timestamp,
            )
        )
    jobs: list[Job] = []
    for conv, turns in by_conversation.items():
        for start in range(0, len(turns), CHUNK_TURNS):
            part = turns[start : start + CHUNK_TURNS]
            chunk = ChunkEvent(chunk_id=uuid.uuid4(), bank_id=bank, conversation_id=conv, messages=part)
            jobs.append((chunk, turns[max(0, start - SPEAKER_WINDOW + 1) : start + len(part)]))
    return jobs


def _one_by_one(jobs: Sequence[Job]) -> list[list[ExtractedFact]]:
    return [extract_local(chunk, history) for chunk, history in jobs]


def _coalesced(jobs: Sequence[Job]) -> list[list[ExtractedFact]]:
    out: list[list[ExtractedFact]] = []
    for start in range(0, len(jobs), IN_FLIGHT):
        flight = jobs[start : start + IN_FLIGHT]
        out += extract_local_many(flight[:1]) + (extract_local_many(flight[1:]) if flight[1:] else [])
    return out


def _key(facts: list[list[ExtractedFact]]) -> list[dict[str, Any]]:
    return [f.model_dump(mode="json") for chunk in facts for f in chunk]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--conversation", default="conv-26")
    parser.add_argument("--passes", type=int, default=5)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    jobs = _jobs(args.conversation)
    get_nlp()
    ways: dict[str, Callable[[Sequence[Job]], list[list[ExtractedFact]]]] = {
        "one by one": _one_by_one,
        "coalesced": _coalesced,
    }
    reference = _key(_one_by_one(jobs))  # also warms spaCy up
    n_facts = len(reference)
    cpu: dict[str, list[float]] = {name: [] for name in ways}
    same = {name: True for name in ways}
    for _ in range(args.passes):
        for name, way in ways.items():
            started = time.thread_time()
            found = way(jobs)
            cpu[name].append(1000 * (time.thread_time() - started) / n_facts)
            same[name] = same[name] and _key(found) == reference
    medians = {name: statistics.median(v) for name, v in cpu.items()}
    rows = [
        [name, medians[name], min(cpu[name]), max(cpu[name]), "yes" if same[name] else "NO"] for name in ways
    ]
    print_table(
        f"Local extraction of {args.conversation}: {len(jobs)} chunks, {n_facts} facts, {args.passes} passes",
        ["way", "CPU ms/fact (median)", "min", "max", "same facts"],
        rows,
    )
    write_json(
        args.json,
        {
            "conversation": args.conversation,
            "chunks": len(jobs),
            "facts": n_facts,
            "cpu_ms_per_fact": cpu,
            "median": medians,
            "ratio": medians["coalesced"] / medians["one by one"],
            "same_facts": same,
        },
    )


if __name__ == "__main__":
    main()
