"""Nothing lost, nothing doubled: a worker killed mid-stream, and the whole runtime killed.

Both scenarios run with the journal sweeper effectively off (redelivery after an hour), so
what they show is the stream's own delivery: Faust acking and committing correctly, and
`tempr up` re-publishing the journal when it starts on an empty broker log.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import httpx
import psutil
import pytest

from tempr.streams.runtime import Supervisor, child_env
from tests.conftest import broker_env, free_port, make_settings, running_stack, wait_until

pytestmark = pytest.mark.integration

_WORDS = [
    "river",
    "mountain",
    "violin",
    "pancake",
    "harbor",
    "lantern",
    "cactus",
    "meteor",
    "tulip",
    "falcon",
    "quartz",
    "glacier",
    "saddle",
    "marble",
    "orchard",
    "compass",
    "lobster",
    "canyon",
    "velvet",
    "thunder",
    "pepper",
    "walnut",
    "saffron",
    "kettle",
    "bamboo",
    "crystal",
    "dolphin",
    "ember",
    "fossil",
    "garlic",
    "hammock",
    "iceberg",
    "jasmine",
    "kayak",
    "lemon",
    "magnet",
    "nectar",
    "oyster",
    "parrot",
    "quilt",
    "ribbon",
    "sapphire",
    "tractor",
    "umbrella",
    "vulture",
    "wagon",
    "yogurt",
    "zeppelin",
    "anchor",
    "biscuit",
    "candle",
    "dune",
    "easel",
    "ferry",
    "gondola",
    "hazel",
    "igloo",
    "jigsaw",
    "koala",
    "lagoon",
    "mango",
    "nutmeg",
]


def _sentences(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [
        f"{' '.join(rng.sample(_WORDS, 6))} number {i} {rng.choice(_WORDS)} {rng.randint(1000, 99999)}"
        for i in range(n)
    ]


def _retain_all(base_url: str, bank: str, texts: list[str], *, batch: int = 200) -> list[str]:
    """Returns the message ids the API accepted (202); every batch must be accepted."""
    accepted: list[str] = []
    with httpx.Client(base_url=base_url, timeout=30) as client:
        for start in range(0, len(texts), batch):
            items = [
                {
                    "content": t,
                    "message_id": f"m{start + j}",
                    "conversation_id": f"conv-{(start + j) % 16}",
                    "speaker": "Tester",
                    "timestamp": "2024-01-01T12:00:00Z",
                }
                for j, t in enumerate(texts[start : start + batch])
            ]
            r = client.post(f"/v1/banks/{bank}/memories", json={"items": items})
            assert r.status_code == 202, f"batch at {start}: {r.status_code} {r.text[:300]}"
            accepted.extend(i["message_id"] for i in items)
    return accepted


async def _stored_counts(dsn: str, bank: str) -> tuple[Counter[str], int, int]:
    conn = await asyncpg.connect(dsn)
    try:
        rows = await conn.fetch("SELECT source_message_ids FROM memory_units WHERE bank_id = $1", bank)
        pending = await conn.fetchval(
            "SELECT count(*) FROM messages WHERE bank_id = $1 AND processed_at IS NULL", bank
        )
        republished = await conn.fetchval(
            "SELECT count(*) FROM messages WHERE bank_id = $1 AND publish_count > 1", bank
        )
    finally:
        await conn.close()
    counts: Counter[str] = Counter(mid for r in rows for mid in r["source_message_ids"])
    return counts, pending, republished


def _assert_exactly_once(dsn: str, bank: str, accepted: list[str], timeout: float = 240) -> int:
    def done() -> bool:
        _, pending, _ = asyncio.run(_stored_counts(dsn, bank))
        return pending == 0

    wait_until(done, timeout=timeout, interval=1.0)
    counts, _, republished = asyncio.run(_stored_counts(dsn, bank))
    missing = [m for m in accepted if counts[m] == 0]
    doubled = {m: c for m, c in counts.items() if c > 1}
    assert not missing, f"{len(missing)} accepted messages lost, e.g. {missing[:5]}"
    assert not doubled, f"{len(doubled)} messages stored more than once, e.g. {list(doubled)[:5]}"
    assert set(counts) == set(accepted)
    return republished


@pytest.fixture(scope="module")
def quiet_sweeper_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Supervisor]:
    with running_stack(make_settings(tmp_path_factory.mktemp("crash"), redeliver_after_s=3600.0)) as stack:
        yield stack


def test_worker_killed_mid_stream_loses_and_doubles_nothing(quiet_sweeper_stack: Supervisor) -> None:
    s = quiet_sweeper_stack.settings
    assert s.database_url
    log = open(s.data_dir / "extra-worker.log", "ab")  # noqa: SIM115
    second = subprocess.Popen(
        [sys.executable, "-m", "tempr.cli", "worker"], env=child_env(s), stdout=log, stderr=subprocess.STDOUT
    )
    try:
        wait_until(lambda: b"Worker]: Ready" in (s.data_dir / "extra-worker.log").read_bytes(), timeout=120)
        time.sleep(3)  # let the group rebalance onto two members
        bank = "crash-worker"
        texts = _sentences(3000, seed=7)
        accepted = _retain_all(f"http://{s.host}:{s.port}", bank, texts)
        assert len(accepted) == len(texts)

        def progressing() -> bool:
            counts, _, _ = asyncio.run(_stored_counts(s.database_url or "", bank))
            return len(counts) >= 300

        wait_until(progressing, timeout=120)
        second.send_signal(signal.SIGKILL)
        second.wait(10)
        republished = _assert_exactly_once(s.database_url, bank, accepted)
        assert republished == 0, "the journal sweeper had to step in: the stream itself lost records"
    finally:
        if second.poll() is None:
            second.kill()
        log.close()


def _tempr_up(data_dir: Path, port: int, broker_port: int) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TEMPR_")}
    env.update(TEMPR_REDELIVER_AFTER_S="3600", TEMPR_TOPIC_PARTITIONS="4", TEMPR_CHUNK_IDLE_S="0.5")
    # Two API and two stream worker processes, as on a 4-core host: all must die with the
    # supervisor and come back.
    env.update(TEMPR_API_WORKERS="2", TEMPR_STREAM_WORKERS="2")
    env.update(broker_env())  # under --broker kafka: its own Kafka, killed with it
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tempr.cli",
            "up",
            "--data-dir",
            str(data_dir),
            "--port",
            str(port),
            "--broker-port",
            str(broker_port),
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _healthy(port: int) -> bool:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def test_whole_runtime_killed_and_restarted_loses_and_doubles_nothing(tmp_path: Path) -> None:
    port, broker_port = free_port(), free_port()
    up = _tempr_up(tmp_path, port, broker_port)
    try:
        wait_until(lambda: _healthy(port), timeout=300)
        bank = "crash-runtime"
        texts = _sentences(2000, seed=11)
        accepted = _retain_all(f"http://127.0.0.1:{port}", bank, texts)
        assert len(accepted) == len(texts)
        # pgserver listens on a Unix socket inside its data directory.
        url = f"postgresql://postgres:@/postgres?host={tmp_path / 'postgres'}"

        def progressing() -> bool:
            counts, _, _ = asyncio.run(_stored_counts(url, bank))
            return len(counts) >= 100

        wait_until(progressing, timeout=120)
        children = [c for c in psutil.Process(up.pid).children() if "tempr.cli" in " ".join(c.cmdline())]
        assert sorted(c.cmdline()[-1] for c in children) == ["api", "worker", "worker"]
        # The API's own worker processes too (Postgres alone is meant to outlive the kill).
        children += [d for c in children for d in c.children(recursive=True) if "postgres" not in d.name()]
        up.send_signal(signal.SIGKILL)  # no cleanup at all: children die with it, Postgres stays
        up.wait(10)
        wait_until(lambda: not _healthy(port), timeout=30)
        # None lingers (a worker's graceful stop can hang on the dead broker, and a leftover
        # consumer would hold partitions the restarted worker needs): gone within the grace.
        wait_until(
            lambda: not any(c.is_running() and c.status() != psutil.STATUS_ZOMBIE for c in children),
            timeout=60,
        )
        _, pending, _ = asyncio.run(_stored_counts(url, bank))
        assert pending > 0, "the kill came too late to test anything"

        up = _tempr_up(tmp_path, port, broker_port)
        wait_until(lambda: _healthy(port), timeout=300)
        _assert_exactly_once(url, bank, accepted, timeout=420)
    finally:
        if up.poll() is None:
            up.send_signal(signal.SIGTERM)
            up.wait(60)
    # A clean stop leaves no Postgres behind.
    assert not (tmp_path / "postgres" / "postmaster.pid").exists()
