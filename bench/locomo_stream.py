"""LoCoMo ingested as a live stream: every turn sent alone, a gap longer than the segmenter's
idle flush after each, so that every turn becomes a chunk of its own, as when a chat platform
forwards turns as they are written. Everything else is the LoCoMo retrieval bench.

The gap is scaled down with the server's idle flush (``TEMPR_CHUNK_IDLE_S``, set here for the
embedded server; pass a matching ``--stream-gap`` with ``--url``), and the sessions of a
conversation (each its own conversation id) are streamed side by side, so a run takes minutes
rather than the hours a real chat would.

    python -m bench.locomo_stream [--stream-gap 0.6] [--stream-idle 0.2] [--stream-parallel 19]
        [any option of bench.locomo_retrieval]
"""

from __future__ import annotations

import argparse
import os
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx

from bench import locomo_retrieval
from bench.common import console, wait_until_materialized

__all__ = ["main", "stream_ingest"]

DEFAULT_IDLE_S = 0.2
DEFAULT_GAP_S = 0.6  # the flush timer runs every max(0.2, idle / 2) s: idle + timer + margin


def _stream_session(base_url: str, bank: str, items: list[dict[str, Any]], gap_s: float) -> None:
    with httpx.Client(base_url=base_url, timeout=120) as client:
        for item in items:
            response = client.post(f"/v1/banks/{bank}/memories", json={"items": [item]})
            if response.status_code != 202:
                raise RuntimeError(f"retain into {bank} failed: {response.status_code} {response.text}")
            time.sleep(gap_s)


def stream_ingest(client: httpx.Client, sample: Any, *, gap_s: float, parallel: int) -> dict[str, Any]:
    """Send every turn of the sample alone, ``gap_s`` apart within its session, ``parallel``
    sessions at once; wait until materialized. Same report as the batch ingest."""
    sessions: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for item in sample.items:
        sessions[item.conversation_id].append(item.model_dump(mode="json", exclude_defaults=True))
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=parallel) as pool:
        done = [
            pool.submit(_stream_session, str(client.base_url), sample.bank, items, gap_s)
            for items in sessions.values()
        ]
        for future in done:
            future.result()
    posted = time.perf_counter() - started
    wait_until_materialized(client)
    seconds = time.perf_counter() - started
    total = client.get(f"/v1/banks/{sample.bank}/memories", params={"limit": 1}).json()["total"]
    return {
        "turns": len(sample.items),
        "facts": total,
        "post_seconds": posted,
        "seconds": seconds,
        "turns_per_second": len(sample.items) / seconds if seconds else None,
        "stream": {"gap_s": gap_s, "parallel": parallel, "sessions": len(sessions)},
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, add_help=False)
    parser.add_argument("--stream-gap", type=float, default=DEFAULT_GAP_S, help="seconds after each turn")
    parser.add_argument(
        "--stream-idle", type=float, default=DEFAULT_IDLE_S, help="the embedded server's chunk idle flush"
    )
    parser.add_argument("--stream-parallel", type=int, default=19, help="sessions streamed at once")
    args, rest = parser.parse_known_args(argv)
    if args.stream_gap <= args.stream_idle:
        raise SystemExit("--stream-gap must be longer than the idle flush, or turns share chunks")
    os.environ["TEMPR_CHUNK_IDLE_S"] = str(args.stream_idle)  # read by the embedded server's settings
    console.print(
        f"streaming: one turn per request, {args.stream_gap}s apart, idle flush {args.stream_idle}s"
    )

    def ingest(client: httpx.Client, sample: Any) -> dict[str, Any]:
        return stream_ingest(client, sample, gap_s=args.stream_gap, parallel=args.stream_parallel)

    locomo_retrieval.ingest = ingest  # the bench's one ingest step, streamed
    locomo_retrieval.main(rest)


if __name__ == "__main__":
    main()
