"""What the input checks cost on the hot paths, side by side in one run.

Each path runs with the models and chunking of a git revision without the checks (default
`7ba5045`, before issue 15) and with the current ones, interleaved round by round so machine
load hits both alike:

- retain: `RetainRequest` validation of a 100-item body of LoCoMo-like turns (API and producer);
- recall: `RecallRequest` validation;
- event: `MessageEvent` decoding, as the segmenter does for every record;
- segment: `Segmenter.add` over a conversation's 100 turns (now also counts sentences);
- guards: one request through the Host/Origin and body-size middlewares (before: none).

    python -m bench.input_checks [--rounds 30] [--before REV] [--json PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import time
import types
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from bench.common import REPO, print_table, summarize, write_json

TURN = (
    "I went to the LGBTQ support group yesterday and it was so powerful, everyone was kind. "
    "We talked about coming out stories and I felt really accepted."
)


def _module_at(rev: str, path: str, name: str) -> types.ModuleType:
    """A module's source at `rev`, loaded beside the current package under another name."""
    source = subprocess.run(
        ["git", "show", f"{rev}:{path}"], cwd=REPO, check=True, capture_output=True, text=True
    )
    module = types.ModuleType(name)
    module.__dict__["__name__"] = name
    sys.modules[name] = module
    exec(compile(source.stdout, f"{rev}:{path}", "exec"), module.__dict__)
    return module


def _time(fn: Callable[[], object], repeat: int) -> float:
    start = time.perf_counter()
    for _ in range(repeat):
        fn()
    return (time.perf_counter() - start) / repeat * 1e6  # µs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--before", default="7ba5045")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()

    from tempr.agents import segment_messages as seg_now
    from tempr.schemas import api as api_now
    from tempr.schemas import events as events_now
    from tempr.schemas import recall as recall_now

    api_old = _module_at(args.before, "schemas/api.py", "bench_old_api")
    recall_old = _module_at(args.before, "schemas/recall.py", "bench_old_recall")
    events_old = _module_at(args.before, "schemas/events.py", "bench_old_events")
    seg_old = _module_at(args.before, "agents/segment_messages.py", "bench_old_segment")

    now = datetime(2024, 5, 1, tzinfo=UTC)
    items = [
        {"content": TURN, "speaker": "Caroline", "timestamp": "2023-05-08T13:56:00Z", "conversation_id": "c1",
         "message_id": f"D1:{i}", "tags": ["locomo"], "metadata": {"session": 1}}
        for i in range(100)
    ]  # fmt: skip
    body = {"items": items}
    recall = {"query": "When did Caroline go to the support group?", "max_tokens": 4096, "budget": "mid"}
    event_json = events_now.encode_event(
        events_now.MessageEvent(
            event_id=events_now.UUID(int=1), bank_id="b", message_id="m", content=TURN, speaker="Caroline",
            conversation_id="c1", metadata={"session": 1}, received_at=now,
        )
    )  # fmt: skip
    messages = [
        events_now.MessageEvent(
            event_id=events_now.UUID(int=i), bank_id="b", message_id=f"m{i}", content=TURN, speaker="Caroline",
            conversation_id="c1", received_at=now,
        )
        for i in range(100)
    ]  # fmt: skip

    def segment(module: types.ModuleType) -> Callable[[], object]:
        def run() -> None:
            s = module.Segmenter(max_turns=8, max_chars=4000, idle_s=1.0)
            for m in messages:
                s.add(m, None, now=0)

        return run

    from tempr.recall_api.guards import BodyLimit, LoopbackOnly

    async def bare(scope: dict, receive: Callable, send: Callable) -> None:
        await receive()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})

    guarded = LoopbackOnly(BodyLimit(bare, max_bytes=8_000_000))
    scope = {
        "type": "http", "method": "POST", "path": "/v1/banks/b/recall", "query_string": b"",
        "headers": [(b"host", b"127.0.0.1:8000"), (b"content-length", b"60"), (b"content-type", b"application/json")],
    }  # fmt: skip

    async def _receive() -> dict:
        return {"type": "http.request", "body": b"{}" * 30, "more_body": False}

    async def _send(_: dict) -> None:
        return None

    loop = asyncio.new_event_loop()

    def request(app: Callable) -> Callable[[], object]:
        return lambda: loop.run_until_complete(app(scope, _receive, _send))

    paths: dict[str, tuple[Callable[[], object], Callable[[], object], int]] = {
        "request guards": (request(bare), request(guarded), 2000),
        "retain body, 100 items": (
            lambda: api_old.RetainRequest.model_validate(body),
            lambda: api_now.RetainRequest.model_validate(body),
            20,
        ),
        "recall request": (
            lambda: recall_old.RecallRequest.model_validate(recall),
            lambda: recall_now.RecallRequest.model_validate(recall),
            2000,
        ),
        "message event decode": (
            lambda: events_old.decode_event(event_json),
            lambda: events_now.decode_event(event_json),
            2000,
        ),
        "segment 100 turns": (segment(seg_old), segment(seg_now), 5),
    }
    samples: dict[str, dict[str, list[float]]] = {k: {"before": [], "now": []} for k in paths}
    for _ in range(args.rounds):
        for name, (before, after, repeat) in paths.items():
            samples[name]["before"].append(_time(before, repeat))
            samples[name]["now"].append(_time(after, repeat))

    rows, out = [], {}
    for name, sample in samples.items():
        b, n = summarize(sample["before"]), summarize(sample["now"])
        ratio = n["median"] / b["median"]
        rows.append([name, b["median"], n["median"], ratio])
        out[name] = {"before_us": b, "now_us": n, "ratio_median": ratio}
    print_table(
        f"Input checks: median µs per call, {args.rounds} interleaved rounds (before = {args.before})",
        ["path", "before µs", "now µs", "now/before"],
        rows,
    )
    write_json(args.json, {"before": args.before, "rounds": args.rounds, "paths": out})


if __name__ == "__main__":
    main()
