"""A real HTTP server for the remote model paths: OpenAI-compatible `/v1/embeddings` and a
`/rerank` in TEI's or Cohere's shape, so the real clients are exercised end to end.

    with ModelServer(dimension=768) as server:
        settings = Settings(embedding_base_url=server.base_url + "/v1", embedding_model="m768")

Embeddings are a deterministic bag of hashed words (similar texts get similar vectors, so
recall's semantic arm still means something); rerank scores count the query's words in each
document. uvicorn runs in a daemon thread on 127.0.0.1 and a free port.
"""

from __future__ import annotations

import hashlib
import re
import socket
import threading
import time
from typing import Any, Literal, Self

import numpy as np
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

__all__ = ["ModelServer", "hashed_embedding"]

_WORD = re.compile(r"[a-z0-9]+")


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def hashed_embedding(text: str, dimension: int) -> list[float]:
    vector = np.zeros(dimension, dtype=np.float64)
    for word in _words(text) or ["<empty>"]:
        digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
        vector[int.from_bytes(digest[:4], "little") % dimension] += 1.0 if digest[4] & 1 else -1.0
    return [float(x) for x in vector * 3.0]  # not normalized: the client must normalize


class ModelServer:
    def __init__(self, *, dimension: int = 768, rerank_shape: Literal["tei", "cohere"] = "tei") -> None:
        self.dimension = dimension
        self.rerank_shape = rerank_shape
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.fail_with: int | None = None  # answer every request with this status
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._port = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._port}"

    def __enter__(self) -> Self:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        self._port = sock.getsockname()[1]
        app = Starlette(
            routes=[
                Route("/v1/embeddings", self._embeddings, methods=["POST"]),
                Route("/rerank", self._rerank, methods=["POST"]),
            ]
        )
        config = uvicorn.Config(app, log_level="warning", lifespan="off", timeout_graceful_shutdown=2)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [sock]}, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("ModelServer did not start")
            time.sleep(0.01)
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)

    async def _embeddings(self, request: Request) -> JSONResponse:
        body = await request.json()
        self.requests.append(("embeddings", body))
        if self.fail_with:
            return JSONResponse({"error": {"message": "scripted failure"}}, status_code=self.fail_with)
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        data = [
            {"object": "embedding", "index": i, "embedding": hashed_embedding(t, self.dimension)}
            for i, t in enumerate(texts)
        ]
        data.reverse()  # the client must order by index, not by position
        return JSONResponse({"object": "list", "model": body.get("model"), "data": data})

    async def _rerank(self, request: Request) -> JSONResponse:
        body = await request.json()
        self.requests.append(("rerank", body))
        if self.fail_with:
            return JSONResponse({"error": "scripted failure"}, status_code=self.fail_with)
        query = set(_words(body["query"]))
        docs = body["texts"] if self.rerank_shape == "tei" else body["documents"]
        scores = [len(query & set(_words(d))) / (1 + len(query)) for d in docs]
        ranked = sorted(range(len(docs)), key=lambda i: -scores[i])
        if self.rerank_shape == "tei":
            return JSONResponse([{"index": i, "score": scores[i]} for i in ranked])
        return JSONResponse({"results": [{"index": i, "relevance_score": scores[i]} for i in ranked]})
