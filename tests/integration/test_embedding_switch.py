"""Switching an installation to a 768-d remote embedding model.

A bank is built with the packaged 384-d model; the API and the worker then refuse to start with
a 768-d `/v1/embeddings` model (clear error, naming the fix), and also with another 384-d model,
which the column's type cannot tell apart; `tempr migrate --embedding-model`
re-sizes the column and its index and replays the bank; the stack started with the new model
rebuilds the same facts with 768-d vectors, and recall finds them. Own stack (the session's
is shared and must keep its 384-d column).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

import asyncpg
import httpx
import pytest

from tempr.recall_api.main import create_app
from tempr.settings import PACKAGED_EMBEDDING_MODEL, Settings
from tempr.store.embedding_column import EmbeddingDimensionMismatch, EmbeddingModelMismatch
from tempr.store.vector_indexes import build_bank_index
from tempr.streams.context import WorkerContext
from tempr.streams.runtime import child_env
from tests.conftest import free_port, make_settings, running_stack, wait_until
from tests.model_server import ModelServer

pytestmark = pytest.mark.integration

BANK = "switch-bank"
TURNS = [
    ("Caroline", "I moved to Lisbon in May 2023 to start a new job at the aquarium."),
    ("Melanie", "That is wonderful. I started painting sunsets at the beach every weekend."),
    ("Caroline", "My brother Tomas visited me in Lisbon and we went hiking in Sintra."),
]


def _retain(api: httpx.Client) -> None:
    items = [
        {
            "content": text,
            "speaker": speaker,
            "conversation_id": "c1",
            "message_id": f"m{i}",
            "timestamp": f"2023-06-0{i + 1}T10:00:00Z",
        }
        for i, (speaker, text) in enumerate(TURNS)
    ]
    assert api.post(f"/v1/banks/{BANK}/memories", json={"items": items}).status_code == 202


def _settled(api: httpx.Client) -> bool:
    stats = api.get(f"/v1/banks/{BANK}/stats").json()
    return stats["pending_events"] == 0 and sum(stats["facts_by_type"].values()) > 0


async def _facts(dsn: str) -> dict[str, tuple[str, int | None]]:
    conn = await asyncpg.connect(dsn)
    try:
        rows = await conn.fetch(
            "SELECT id::text, text, vector_dims(embedding) AS dims FROM memory_units WHERE bank_id = $1", BANK
        )
        return {r["id"]: (r["text"], r["dims"]) for r in rows}
    finally:
        await conn.close()


async def _indexes(dsn: str) -> list[str]:
    conn = await asyncpg.connect(dsn)
    try:
        rows = await conn.fetch(
            "SELECT indexdef FROM pg_indexes WHERE tablename = 'memory_units' AND indexdef LIKE '%embedding%'"
        )
        return [r["indexdef"] for r in rows]
    finally:
        await conn.close()


async def _index_bank(dsn: str) -> None:
    conn = await asyncpg.connect(dsn)
    try:
        await build_bank_index(conn, BANK, 0)
    finally:
        await conn.close()


async def _start_api(settings: Settings) -> None:
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        pass


async def _start_worker(settings: Settings) -> None:
    ctx = WorkerContext(settings)
    try:
        await ctx.start()
    finally:
        await ctx.stop()


def test_switch_to_a_768d_remote_embedding_model(tmp_path: Path) -> None:
    with ModelServer(dimension=768) as models:
        local = make_settings(tmp_path / "tempr")
        remote = {"embedding_base_url": models.base_url + "/v1", "embedding_model": "remote-768"}

        with running_stack(local) as stack:
            s = stack.settings
            assert s.database_url
            with httpx.Client(base_url=f"http://{s.host}:{s.port}", timeout=30) as api:
                _retain(api)
                wait_until(lambda: _settled(api), timeout=120)
            before = asyncio.run(_facts(s.database_url))
            assert before and {dims for _, dims in before.values()} == {384}
            asyncio.run(_index_bank(s.database_url))  # as a big bank has: it must survive the re-size

            # Start-up with the 768-d model against the 384-d column: a clear refusal, API and worker.
            wrong = s.model_copy(update=remote)
            for start in (_start_api, _start_worker):
                with pytest.raises(EmbeddingDimensionMismatch) as refused:
                    asyncio.run(start(wrong))
                message = str(refused.value)
                assert "768-dimensional" in message and "vector(384)" in message
                assert "tempr migrate --embedding-model remote-768" in message
            # And as processes: each exits (no hanging worker) with the message in its output.
            for command in ("api", "worker"):
                wrong_env = child_env(wrong.model_copy(update={"port": free_port()}))
                ran = subprocess.run(
                    [sys.executable, "-m", "tempr.cli", command],
                    env=wrong_env,
                    capture_output=True,
                    text=True,
                    timeout=180,
                )
                assert ran.returncode != 0
                assert "tempr migrate --embedding-model remote-768" in ran.stdout + ran.stderr

            # Another model of the same size: the column fits, the recorded model does not.
            with ModelServer(dimension=384) as same_size:
                other = s.model_copy(
                    update={"embedding_base_url": same_size.base_url + "/v1", "embedding_model": "remote-384"}
                )
                for start in (_start_api, _start_worker):
                    with pytest.raises(EmbeddingModelMismatch) as refused:
                        asyncio.run(start(other))
                    message = str(refused.value)
                    assert "'remote-384'" in message and repr(PACKAGED_EMBEDDING_MODEL) in message
                    assert "tempr migrate --embedding-model remote-384" in message

        # `tempr up` with the new model before the switch gives up and says why (not a timeout).
        with (
            pytest.raises(RuntimeError, match="tempr migrate --embedding-model remote-768"),
            running_stack(local.model_copy(update=remote)),
        ):
            pass

        # The switch, as an operator runs it: the embedded Postgres of the stopped installation.
        env = {k: v for k, v in os.environ.items() if not k.startswith("TEMPR_")}
        env.update(TEMPR_DATA_DIR=str(local.data_dir), TEMPR_EMBEDDING_BASE_URL=remote["embedding_base_url"])
        migrated = subprocess.run(
            [sys.executable, "-m", "tempr.cli", "migrate", "--embedding-model", "remote-768"],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        out = " ".join((migrated.stdout + migrated.stderr).split())
        assert migrated.returncode == 0, out
        assert "re-sized vector(384) -> vector(768)" in out
        assert f"1 banks replayed ({len(TURNS)} messages reopened, {len(before)} facts removed" in out

        with running_stack(local.model_copy(update=remote)) as stack:
            s = stack.settings
            assert s.database_url
            indexes = asyncio.run(_indexes(s.database_url))
            assert any("hnsw" in d and "vector_cosine_ops" in d and BANK in d for d in indexes), indexes
            with httpx.Client(base_url=f"http://{s.host}:{s.port}", timeout=30) as api:
                deadline = time.monotonic() + 180
                after = asyncio.run(_facts(s.database_url))
                while (set(after) != set(before) or None in {d for _, d in after.values()}) and (
                    time.monotonic() < deadline
                ):
                    time.sleep(1)
                    after = asyncio.run(_facts(s.database_url))
                # Replay is deterministic: the same facts (ids, texts), now with 768-d vectors.
                assert {k: t for k, (t, _) in after.items()} == {k: t for k, (t, _) in before.items()}
                assert {dims for _, dims in after.values()} == {768}
                recalled = api.post(
                    f"/v1/banks/{BANK}/recall", json={"query": "Where did Caroline move?", "budget": "low"}
                )
                assert recalled.status_code == 200, recalled.text
                assert any("Lisbon" in r["text"] for r in recalled.json()["results"])
        assert any(kind == "embeddings" and len(body["input"]) > 1 for kind, body in models.requests)
