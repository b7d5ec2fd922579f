"""Local versus remote embeddings: the same model in-process and behind `/v1/embeddings`.

The packaged all-MiniLM-L6-v2 embeds LoCoMo conv-26's turns twice in one run: in this process
(`LocalEmbedder`) and through `RemoteEmbedder`, the OpenAI-compatible client, against that same
model served over HTTP by a second process (uvicorn). It reports texts/s of each (median of
`--repeats`), the remote path's cost relative to the local one, and the cosine between the two
vectors of every text (the remote path must not change the vectors).

    python -m bench.embedders [--repeats 3] [--batch-size 64] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from bench.common import REPO, console, free_port, print_table, write_json
from tempr.inference.embeddings import LocalEmbedder, RemoteEmbedder
from tempr.settings import PACKAGED_EMBEDDING_MODEL

CONVERSATION = REPO.parent / "shared" / "data" / "locomo" / "conv-26.json"


def _turns(path: Path) -> list[str]:
    data = json.loads(path.read_text())
    conv = data.get("conversation", data)
    return [
        turn["text"]
        for key, session in conv.items()
        if key.startswith("session_") and isinstance(session, list)
        for turn in session
    ]


def serve(port: int) -> None:
    """The model behind an OpenAI-compatible `/v1/embeddings`, for the remote side."""
    import uvicorn
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    model = LocalEmbedder(PACKAGED_EMBEDDING_MODEL)

    async def embeddings(request: Request) -> JSONResponse:
        body = await request.json()
        vectors = await model.aencode(body["input"])
        data = [{"object": "embedding", "index": i, "embedding": v.tolist()} for i, v in enumerate(vectors)]
        return JSONResponse({"object": "list", "model": body["model"], "data": data})

    app = Starlette(routes=[Route("/v1/embeddings", embeddings, methods=["POST"])])
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


def _rate(encode: Any, texts: list[str], repeats: int) -> tuple[float, np.ndarray]:
    times, vectors = [], np.zeros(0)
    for _ in range(repeats):
        started = time.perf_counter()
        vectors = encode(texts)
        times.append(time.perf_counter() - started)
    return len(texts) / statistics.median(times), vectors


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--json", type=Path, default=REPO / "bench" / "results" / "embedders.json")
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve)
        return

    texts = _turns(CONVERSATION)
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "bench.embedders", "--serve", str(port)], cwd=REPO)
    try:
        deadline = time.monotonic() + 300
        while True:
            try:
                httpx.post(
                    f"http://127.0.0.1:{port}/v1/embeddings", json={"model": "m", "input": ["up?"]}, timeout=5
                )
                break
            except httpx.HTTPError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise RuntimeError("the embedding server did not start") from None
                time.sleep(0.5)
        local = LocalEmbedder(PACKAGED_EMBEDDING_MODEL, batch_size=args.batch_size)
        remote = RemoteEmbedder("all-MiniLM-L6-v2", f"http://127.0.0.1:{port}/v1", batch_size=args.batch_size)
        local.encode(texts[:64])  # warm both sides
        remote.encode(texts[:64])
        local_rate, local_vectors = _rate(local.encode, texts, args.repeats)
        remote_rate, remote_vectors = _rate(remote.encode, texts, args.repeats)
    finally:
        server.terminate()
        server.wait(30)
    cosines = np.sum(local_vectors * remote_vectors, axis=1)
    print_table(
        f"Embeddings: {len(texts)} conv-26 turns, batch {args.batch_size}",
        ["path", "texts/s", "dimension"],
        [
            ["local (in-process)", local_rate, local.dimension],
            ["remote (/v1/embeddings, same model)", remote_rate, remote.dimension],
        ],
        digits=1,
    )
    console.print(
        f"remote / local rate: {remote_rate / local_rate:.2f}; cosine local vs remote: "
        f"min {cosines.min():.6f}, mean {cosines.mean():.6f}"
    )
    write_json(
        args.json,
        {
            "measured_at": datetime.now(UTC).isoformat(),
            "texts": len(texts),
            "batch_size": args.batch_size,
            "repeats": args.repeats,
            "local_texts_per_s": local_rate,
            "remote_texts_per_s": remote_rate,
            "remote_over_local": remote_rate / local_rate,
            "cosine_min": float(cosines.min()),
            "cosine_mean": float(cosines.mean()),
        },
    )


if __name__ == "__main__":
    main()
