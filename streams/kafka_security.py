"""SASL and TLS for every Kafka client, from the one settings class.

aiokafka clients (API publisher, sweeper, topic admin, producer helper) take keyword options;
the Faust worker takes a credentials object. Both are built here so they cannot disagree.
"""

from __future__ import annotations

import ssl
from typing import Any

from aiokafka.helpers import create_ssl_context

from tempr.settings import Settings

__all__ = ["faust_broker_options", "kafka_client_options"]


def _ssl_context(settings: Settings) -> ssl.SSLContext | None:
    if not settings.kafka_security_protocol.endswith("SSL"):
        return None
    context = create_ssl_context(
        cafile=str(settings.kafka_ssl_cafile) if settings.kafka_ssl_cafile else None,
        certfile=str(settings.kafka_ssl_certfile) if settings.kafka_ssl_certfile else None,
        keyfile=str(settings.kafka_ssl_keyfile) if settings.kafka_ssl_keyfile else None,
    )
    context.check_hostname = settings.kafka_ssl_check_hostname
    return context


def kafka_client_options(settings: Settings) -> dict[str, Any]:
    """Keyword options for AIOKafkaProducer / AIOKafkaConsumer / AIOKafkaAdminClient."""
    protocol = settings.kafka_security_protocol
    if protocol == "PLAINTEXT":
        return {}
    options: dict[str, Any] = {"security_protocol": protocol}
    context = _ssl_context(settings)
    if context is not None:
        options["ssl_context"] = context
    if protocol.startswith("SASL_"):
        assert settings.kafka_sasl_password is not None  # checked by Settings
        options |= {
            "sasl_mechanism": settings.kafka_sasl_mechanism,
            "sasl_plain_username": settings.kafka_sasl_username,
            "sasl_plain_password": settings.kafka_sasl_password.get_secret_value(),
        }
    return options


def faust_broker_options(settings: Settings) -> dict[str, Any]:
    """Keyword options for `faust.App` (its aiokafka driver turns them into the same options)."""
    import faust

    protocol = settings.kafka_security_protocol
    context = _ssl_context(settings)
    if protocol.startswith("SASL_"):
        assert settings.kafka_sasl_password is not None
        credentials: Any = faust.SASLCredentials(
            username=settings.kafka_sasl_username,
            password=settings.kafka_sasl_password.get_secret_value(),
            mechanism=settings.kafka_sasl_mechanism,
            ssl_context=context,
        )
        return {"broker_credentials": credentials}
    if protocol == "SSL":
        assert context is not None
        return {"broker_credentials": faust.SSLCredentials(context)}
    return {}
