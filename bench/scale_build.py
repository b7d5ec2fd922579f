"""Builds the banks of the scale bench, reproducibly, into an empty tempr schema.

How the synthetic facts are made (issue 16): each fact copies a real LoCoMo turn (all the
conversations under ../shared/data/locomo and bench/data/heldout, text as "Speaker: words", its session date as
``mentioned_at``); its embedding is the turn's real MiniLM embedding plus Gaussian noise
scaled so the copy sits at cosine ≈ 0.9 from it; its entities are the turn's speaker and
capitalized names, as the resolver makes them (``unit_entities`` rows, ``entities`` with
mention counts); its links have the shapes ingest writes: temporal to the 5 previous facts
of the bank, entity to the 3 latest facts sharing each non-speaker name, semantic to the
earlier copies of the same turn (up to 3). Banks are written in round-robin chunks, as a
stream interleaves them, so one bank's rows are spread over the table.

Loading uses COPY (asyncpg ``copy_records_to_table``); the secondary indexes are dropped for
the load and rebuilt after, foreign-key and counter triggers are off during it (the counters
are recounted after: ``session_replication_role = replica``).
"""

from __future__ import annotations

import hashlib
import re
import time
import uuid
from collections import Counter, defaultdict, deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

import asyncpg
import numpy as np

from bench.common import console
from bench.locomo_data import DATA_DIR, HELDOUT_DIR
from tempr.conversations import read_conversations

__all__ = ["BankPlan", "Source", "bank_plan", "embed_sources", "load_banks", "load_sources"]

_NAME = re.compile(r"(?<![.!?]\s)(?<!^)\b([A-Z][a-z]{2,})\b")
_NS = uuid.UUID("5f0b6c8e-7d1a-4c4e-9a52-16f0c0de5ca1")
COSINE = 0.9
_CHUNK = 200  # facts per bank per round


@dataclass(frozen=True, slots=True)
class Source:
    text: str
    speaker: str
    names: tuple[str, ...]
    when: datetime
    message_id: str


def load_sources(paths: Sequence[Path] | None = None) -> list[Source]:
    """The turns of the given conversation files (default: every LoCoMo and held-out one)."""
    out = []
    for path in paths or sorted(p for d in (DATA_DIR, HELDOUT_DIR) for p in d.glob("*.json")):
        for conversation in read_conversations(path):
            for item in conversation.items:
                speaker = item.speaker or "someone"
                names = tuple(dict.fromkeys(n for n in _NAME.findall(item.content) if n != speaker))
                assert item.timestamp is not None
                out.append(
                    Source(f"{speaker}: {item.content}", speaker, names, item.timestamp, item.message_id)
                )
    return out


def embed_sources(sources: Sequence[Source], cache_dir: Path) -> np.ndarray:
    """The real embeddings of the turns, cached by their texts' digest."""
    digest = hashlib.sha1("\n".join(s.text for s in sources).encode()).hexdigest()[:16]
    path = cache_dir / f"scale-sources-{digest}.npy"
    if path.exists():
        return np.load(path)
    from tempr.inference.embeddings import get_embedder
    from tempr.settings import PACKAGED_EMBEDDING_MODEL

    started = time.perf_counter()
    vectors = get_embedder(PACKAGED_EMBEDDING_MODEL).encode([s.text for s in sources])
    console.print(f"embedded {len(sources)} turns in {time.perf_counter() - started:.0f}s")
    cache_dir.mkdir(parents=True, exist_ok=True)
    np.save(path, vectors)
    return vectors


@dataclass
class BankPlan:
    bank_id: str
    facts: int


def bank_plan(total: int, measured: Sequence[int], min_banks: int, seed: int) -> list[BankPlan]:
    """The measured banks (``scale-<size>``) and filler banks of log-uniform sizes (50 to
    3,000) up to ``total`` facts, at least ``min_banks`` banks in all."""
    banks = [BankPlan(f"scale-{n}", n) for n in measured]
    rest = total - sum(measured)
    fillers = max(min_banks - len(banks), 1)
    rng = np.random.default_rng(seed)
    weights = np.exp(rng.uniform(np.log(50), np.log(3000), fillers))
    sizes = np.maximum(1, np.floor(weights / weights.sum() * max(rest, fillers))).astype(int)
    banks += [BankPlan(f"filler-{i:05d}", int(n)) for i, n in enumerate(sizes)]
    return banks


@dataclass
class _BankState:
    plan: BankPlan
    rng: np.random.Generator
    done: int = 0
    recent: deque[uuid.UUID] = field(default_factory=lambda: deque(maxlen=5))
    by_name: dict[str, deque[uuid.UUID]] = field(default_factory=dict)
    by_source: dict[int, list[uuid.UUID]] = field(default_factory=lambda: defaultdict(list))
    mentions: Counter[str] = field(default_factory=Counter)
    first_seen: dict[str, datetime] = field(default_factory=dict)


def _entity_id(bank_id: str, name: str) -> uuid.UUID:
    return uuid.uuid5(_NS, f"{bank_id}\x00entity\x00{name.lower()}")


def _rows(
    state: _BankState, count: int, sources: Sequence[Source], vectors: np.ndarray, sigma: float
) -> Iterator[tuple[tuple[object, ...], list[tuple[object, ...]], list[tuple[object, ...]]]]:
    bank = state.plan.bank_id
    picks = state.rng.integers(0, len(sources), count)
    noise = state.rng.normal(0.0, sigma, (count, vectors.shape[1])).astype(np.float32)
    for k, src_index in enumerate(picks):
        i = state.done + k
        src = sources[int(src_index)]
        vec = vectors[src_index] + noise[k]
        vec /= np.linalg.norm(vec)
        fid = uuid.uuid5(_NS, f"{bank}\x00fact\x00{i}")
        # A bank lives on through the years: copies of old turns happen later again.
        when = src.when + timedelta(days=int(i // 2000) * 30, minutes=i % 2000)
        fact_type = "experience" if i % 3 else "world"
        unit = (fid, bank, src.text, vec, fact_type, when, when if i % 4 == 0 else None, [src.message_id])
        links: list[tuple[object, ...]] = []
        for back, prev in enumerate(reversed(state.recent), start=1):
            links.append((prev, fid, "temporal", 1.0 - 0.1 * back, bank))
        for prev in state.by_source[int(src_index)][-3:]:
            links.append((prev, fid, "semantic", COSINE * COSINE, bank))
        entities: list[tuple[object, ...]] = []
        for name in (src.speaker, *src.names):
            eid = _entity_id(bank, name)
            entities.append((fid, eid, bank))
            state.mentions[name] += 1
            state.first_seen.setdefault(name, when)
            if name != src.speaker:
                seen = state.by_name.setdefault(name, deque(maxlen=3))
                links += [(prev, fid, "entity", 0.75, bank) for prev in seen]
                seen.append(fid)
        state.recent.append(fid)
        state.by_source[int(src_index)].append(fid)
        yield unit, entities, _unique(links)
    state.done += count


def _unique(links: list[tuple[object, ...]]) -> list[tuple[object, ...]]:
    seen: dict[tuple[object, object, object], tuple[object, ...]] = {}
    for link in links:
        seen.setdefault((link[0], link[1], link[2]), link)
    return list(seen.values())


_UNIT_COLUMNS = (
    "id",
    "bank_id",
    "text",
    "embedding",
    "fact_type",
    "mentioned_at",
    "occurred_start",
    "source_message_ids",
)

_RECOUNT = """
    TRUNCATE bank_fact_counts, bank_link_counts;
    INSERT INTO bank_fact_counts SELECT bank_id, fact_type, count(*) FROM memory_units GROUP BY 1, 2;
    INSERT INTO bank_link_counts SELECT bank_id, link_type, count(*) FROM memory_links GROUP BY 1, 2;
"""


async def load_banks(
    conn: asyncpg.Connection,
    plans: Sequence[BankPlan],
    sources: Sequence[Source],
    vectors: np.ndarray,
    *,
    seed: int,
) -> dict[str, float]:
    """Write every bank; returns seconds per phase."""
    sigma = float(np.sqrt(1 / COSINE**2 - 1) / np.sqrt(vectors.shape[1]))
    states = [_BankState(p, np.random.default_rng([seed, i])) for i, p in enumerate(plans)]
    timings: dict[str, float] = {}
    clock = time.perf_counter()
    secondary = await conn.fetch(
        """SELECT indexname, indexdef FROM pg_indexes
           WHERE tablename IN ('memory_units', 'memory_links', 'unit_entities', 'entities')
             AND indexname NOT LIKE '%pkey'"""
    )
    for r in secondary:
        await conn.execute(f"DROP INDEX {r['indexname']}")
    await conn.execute("SET session_replication_role = replica")
    await conn.executemany(
        "INSERT INTO banks (id) VALUES ($1) ON CONFLICT DO NOTHING", [(p.bank_id,) for p in plans]
    )
    written = 0
    total = sum(p.facts for p in plans)
    while any(s.done < s.plan.facts for s in states):
        units: list[tuple[object, ...]] = []
        unit_entities: list[tuple[object, ...]] = []
        links: list[tuple[object, ...]] = []
        for state in states:
            count = min(_CHUNK, state.plan.facts - state.done)
            if count <= 0:
                continue
            for unit, ents, lks in _rows(state, count, sources, vectors, sigma):
                units.append(unit)
                unit_entities += ents
                links += lks
            if len(units) >= 20_000:
                written += await _copy(conn, units, unit_entities, links)
                units, unit_entities, links = [], [], []
                console.print(f"[dim]{written:,}/{total:,} facts[/dim]")
        written += await _copy(conn, units, unit_entities, links)
    entity_rows = [
        (_entity_id(s.plan.bank_id, name), s.plan.bank_id, name, n, s.first_seen[name])
        for s in states
        for name, n in s.mentions.items()
    ]
    await conn.copy_records_to_table(
        "entities",
        records=entity_rows,
        columns=("id", "bank_id", "canonical_name", "mention_count", "first_seen"),
    )
    timings["copy_s"] = time.perf_counter() - clock
    clock = time.perf_counter()
    await conn.execute("SET session_replication_role = origin")
    await conn.execute("SET maintenance_work_mem = '512MB'")
    for r in secondary:
        await conn.execute(r["indexdef"])
    timings["secondary_indexes_s"] = time.perf_counter() - clock
    clock = time.perf_counter()
    await conn.execute(_RECOUNT)
    await conn.execute("ANALYZE")
    timings["counters_analyze_s"] = time.perf_counter() - clock
    return timings


async def _copy(
    conn: asyncpg.Connection,
    units: list[tuple[object, ...]],
    unit_entities: list[tuple[object, ...]],
    links: list[tuple[object, ...]],
) -> int:
    if not units:
        return 0
    await conn.copy_records_to_table("memory_units", records=units, columns=_UNIT_COLUMNS)
    await conn.copy_records_to_table(
        "unit_entities", records=_dedupe(unit_entities, 2), columns=("unit_id", "entity_id", "bank_id")
    )
    await conn.copy_records_to_table(
        "memory_links", records=links, columns=("from_id", "to_id", "link_type", "weight", "bank_id")
    )
    return len(units)


def _dedupe(rows: list[tuple[object, ...]], key_len: int) -> list[tuple[object, ...]]:
    return list({row[:key_len]: row for row in rows}.values())
