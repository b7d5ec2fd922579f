"""Create the catalog's topics (idempotent) before any client uses them."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import TopicAlreadyExistsError

from tempr.streams.topics import ALL_TOPICS

__all__ = ["ensure_topics"]


async def ensure_topics(
    bootstrap: str, default_partitions: int, *, timeout: float = 30.0, **client_options: Any
) -> list[str]:
    """Returns the names created now. Retries while the broker is still coming up.

    `client_options` (SASL, TLS) go to the admin client."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=10000, **client_options)
        try:
            await admin.start()
            existing = set(await admin.list_topics())
            missing = [
                NewTopic(t.name, num_partitions=t.partitions or default_partitions, replication_factor=1)
                for t in ALL_TOPICS
                if t.name not in existing
            ]
            if missing:
                with contextlib.suppress(TopicAlreadyExistsError):
                    await admin.create_topics(missing)
            return [t.name for t in missing]
        except Exception:
            if asyncio.get_running_loop().time() > deadline:
                raise
            await asyncio.sleep(0.5)
        finally:
            await admin.close()
