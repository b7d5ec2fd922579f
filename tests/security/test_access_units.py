"""Keys, patterns, buckets, exposure and Kafka client options: pure, no stack."""

from __future__ import annotations

import datetime as dt
import fnmatch
import ssl

import faust
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from pydantic import ValidationError

from tempr.access import (
    OPEN,
    Principal,
    Scope,
    covers,
    hash_secret,
    mint_key,
    parse_key,
    validate_pattern,
    verify_secret,
)
from tempr.keyring import OpenExposure, check_exposure
from tempr.recall_api.auth import POLICY
from tempr.recall_api.rate_limit import RateLimiter, TokenBucket
from tempr.settings import Settings
from tempr.streams.kafka_security import faust_broker_options, kafka_client_options


def test_minted_key_parses_and_verifies_only_with_its_secret_and_pepper() -> None:
    key_id, secret, whole = mint_key()
    assert parse_key(whole) == (key_id, secret)
    stored = hash_secret(secret, b"pepper-1")
    assert verify_secret(secret, stored, b"pepper-1")
    assert not verify_secret(secret, stored, b"pepper-2")
    assert not verify_secret(secret[:-1] + ("A" if secret[-1] != "A" else "B"), stored, b"pepper-1")
    assert stored != secret.encode() and len(stored) == 32
    assert mint_key()[2] != whole


@pytest.mark.parametrize("token", ["", "tmpr_", "Bearer x", "tmpr_zz_abc", "tmpr_0123456789abcdef_short"])
def test_malformed_keys_do_not_parse(token: str) -> None:
    assert parse_key(token) is None


@pytest.mark.parametrize(
    ("pattern", "bank"),
    [
        ("user-1-*", "user-1-a"),
        ("user-1-*", "user-10-a"),
        ("user-1-*", "user-2-a"),
        ("user-1-a", "user-1-a"),
        ("user-1-a", "user-1-ab"),
        ("*", "anything"),
        ("a_b*", "a_bc"),
        ("a_b*", "axbc"),  # '_' is not a wildcard
    ],
)
def test_patterns_match_like_shell_globs_with_one_trailing_star(pattern: str, bank: str) -> None:
    principal = Principal(name="k", scopes=frozenset({Scope.READ}), banks=(pattern,))
    assert principal.sees(bank) == fnmatch.fnmatchcase(bank, pattern)


@pytest.mark.parametrize("bad", ["", "*a", "a*b", "user 1", "-x", "a/b*", "x" * 130])
def test_bad_patterns_are_refused(bad: str) -> None:
    with pytest.raises(ValueError, match="bank pattern"):
        validate_pattern(bad)


def test_covers_forbids_widening() -> None:
    assert covers(["user-1-*"], "user-1-x")
    assert covers(["user-1-*"], "user-1-x*")
    assert not covers(["user-1-*"], "user-*")
    assert not covers(["user-1-x"], "user-1-x*")
    assert covers(["*"], "*")
    assert not covers(["user-*"], "*")


def test_open_principal_sees_everything_with_every_scope() -> None:
    assert OPEN.all_banks and OPEN.visible_patterns() is None
    assert all(OPEN.has(s) for s in Scope)


def test_token_bucket_grants_a_minute_of_burst_then_says_how_long_to_wait() -> None:
    bucket = TokenBucket(per_min=3, tokens=3, updated=0.0)
    assert [bucket.take(0.0) for _ in range(3)] == [None, None, None]
    wait = bucket.take(0.0)
    assert wait == pytest.approx(20.0)
    assert bucket.take(19.0) is not None
    assert bucket.take(20.5) is None


def test_rate_limiter_is_per_key_and_off_in_open_mode_unless_asked() -> None:
    now = [0.0]
    keyed = RateLimiter(Settings(auth="keys", rate_limit_recall_per_min=2), clock=lambda: now[0])
    a = Principal(name="a", scopes=frozenset({Scope.READ}), banks=("*",), key_id="a")
    b = Principal(name="b", scopes=frozenset({Scope.READ}), banks=("*",), key_id="b", rate_limit_per_min=1)
    assert keyed.take(a, "recall") is None and keyed.take(a, "recall") is None
    assert keyed.take(a, "recall") is not None
    assert keyed.take(a, "retain") is None  # its own bucket
    assert keyed.take(b, "recall") is None and keyed.take(b, "recall") == pytest.approx(60.0)
    open_mode = RateLimiter(Settings(rate_limit_recall_per_min=1), clock=lambda: now[0])
    assert all(open_mode.take(OPEN, "recall") is None for _ in range(5))
    asked = RateLimiter(
        Settings(rate_limit_recall_per_min=1, rate_limits_in_open_mode=True), clock=lambda: now[0]
    )
    assert asked.take(OPEN, "recall") is None and asked.take(OPEN, "recall") is not None


@pytest.mark.parametrize(
    ("overrides", "refused"),
    [
        ({}, False),
        ({"host": "0.0.0.0"}, True),
        ({"host": "::"}, True),
        ({"host": "192.0.2.7"}, True),
        ({"host": "localhost"}, False),
        ({"host": "::1"}, False),
        ({"host": "127.0.0.2"}, False),
        ({"host": "0.0.0.0", "auth": "keys"}, False),
        ({"host": "0.0.0.0", "insecure": True}, False),
    ],
)
def test_open_mode_is_refused_off_loopback(overrides: dict, refused: bool) -> None:
    settings = Settings(**overrides)
    if refused:
        with pytest.raises(OpenExposure, match="--insecure"):
            check_exposure(settings)
    else:
        check_exposure(settings)


def test_production_with_keys_needs_an_explicit_pepper() -> None:
    with pytest.raises(ValidationError, match="TEMPR_AUTH_PEPPER"):
        Settings(environment="production", auth="keys", control_key="c" * 32)
    Settings(environment="production", auth="keys", auth_pepper="p" * 32, control_key="c" * 32)


def test_policy_lists_every_route_of_the_app() -> None:
    from fastapi.routing import APIRoute

    from tempr.recall_api.console import ROUTERS
    from tempr.recall_api.main import create_app

    app = create_app(Settings())
    routes = {(m.upper(), p) for p, ops in app.openapi()["paths"].items() for m in ops}
    # The console's pages are left out of the OpenAPI schema; they need a rule all the same.
    routes |= {
        (m, r.path) for router in ROUTERS for r in router.routes if isinstance(r, APIRoute) for m in r.methods
    }
    assert routes == set(POLICY), "every route needs an access rule in recall_api/auth.py POLICY"


# ------------------------------------------------------------------ Kafka clients


def test_plaintext_adds_no_options() -> None:
    assert kafka_client_options(Settings()) == {}
    assert faust_broker_options(Settings()) == {}


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_sasl_reaches_aiokafka_and_faust(mechanism: str) -> None:
    s = Settings(
        kafka_security_protocol="SASL_PLAINTEXT",
        kafka_sasl_mechanism=mechanism,
        kafka_sasl_username="tempr",
        kafka_sasl_password="s3cret",
    )
    assert kafka_client_options(s) == {
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": mechanism,
        "sasl_plain_username": "tempr",
        "sasl_plain_password": "s3cret",
    }
    creds = faust_broker_options(s)["broker_credentials"]
    assert isinstance(creds, faust.SASLCredentials)
    assert (creds.username, creds.password, creds.mechanism.value) == ("tempr", "s3cret", mechanism)
    assert creds.protocol.value == "SASL_PLAINTEXT"


def test_sasl_without_credentials_is_refused() -> None:
    with pytest.raises(ValidationError, match="TEMPR_KAFKA_SASL_MECHANISM"):
        Settings(kafka_security_protocol="SASL_SSL", kafka_sasl_mechanism="PLAIN")


def _self_signed_ca(tmp_path) -> str:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "tempr test CA")])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    path = tmp_path / "ca.pem"
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return str(path)


def test_tls_with_scram_builds_a_context_with_the_ca_for_both_clients(tmp_path) -> None:
    s = Settings(
        kafka_security_protocol="SASL_SSL",
        kafka_sasl_mechanism="SCRAM-SHA-512",
        kafka_sasl_username="tempr",
        kafka_sasl_password="s3cret",
        kafka_ssl_cafile=_self_signed_ca(tmp_path),
        kafka_ssl_check_hostname=False,
    )
    options = kafka_client_options(s)
    context = options["ssl_context"]
    assert isinstance(context, ssl.SSLContext) and context.check_hostname is False
    assert [c["subject"] for c in context.get_ca_certs()] == [((("commonName", "tempr test CA"),),)]
    assert options["security_protocol"] == "SASL_SSL" and options["sasl_mechanism"] == "SCRAM-SHA-512"
    creds = faust_broker_options(s)["broker_credentials"]
    assert creds.protocol.value == "SASL_SSL" and creds.ssl_context.get_ca_certs() == context.get_ca_certs()


def test_tls_only_gives_faust_ssl_credentials(tmp_path) -> None:
    s = Settings(kafka_security_protocol="SSL", kafka_ssl_cafile=_self_signed_ca(tmp_path))
    assert set(kafka_client_options(s)) == {"security_protocol", "ssl_context"}
    assert isinstance(faust_broker_options(s)["broker_credentials"], faust.SSLCredentials)


async def test_every_kafka_client_gets_the_options(tmp_path, monkeypatch) -> None:
    """The API publisher, the worker (Faust app), the topic admin, the producer helper, the
    broker-feature probe and the consumer-group lag reader."""
    from tempr.producer import TemprProducer
    from tempr.streams import publisher as publisher_module
    from tempr.streams.app import create_app as create_worker_app
    from tempr.streams.broker_features import BrokerFeatures
    from tempr.streams.group_lag import GroupLag

    s = Settings(
        data_dir=tmp_path,
        kafka_bootstrap="127.0.0.1:1",
        kafka_security_protocol="SASL_PLAINTEXT",
        kafka_sasl_mechanism="SCRAM-SHA-256",
        kafka_sasl_username="tempr",
        kafka_sasl_password="s3cret",
    )
    helper = TemprProducer.from_settings(s)
    producer = publisher_module.create_producer(s.bootstrap, **helper._options)
    assert producer.client._security_protocol == "SASL_PLAINTEXT"
    assert producer.client._sasl_mechanism == "SCRAM-SHA-256"
    assert producer.client._sasl_plain_username == "tempr"
    # start_producer hands the same options to the idempotence probe and to the producer.
    seen: dict[str, dict] = {}

    async def probe(bootstrap: str, **options: object) -> BrokerFeatures:
        seen["probe"] = options
        return BrokerFeatures(idempotent_producer=False)

    class Started:
        async def start(self) -> None:
            pass

    def build(bootstrap: str, **options: object) -> Started:
        seen["producer"] = options
        return Started()

    monkeypatch.setattr(publisher_module, "detect_features", probe)
    monkeypatch.setattr(publisher_module, "create_producer", build)
    await helper.start()
    assert set(seen) == {"probe", "producer"}
    for options in seen.values():
        assert options["security_protocol"] == "SASL_PLAINTEXT"
        assert options["sasl_mechanism"] == "SCRAM-SHA-256" and options["sasl_plain_username"] == "tempr"
    lag = GroupLag(s.bootstrap, "tempr-workers", ["t"], **kafka_client_options(s))
    assert lag._admin._client._security_protocol == "SASL_PLAINTEXT"
    assert lag._offsets._client._sasl_mechanism == "SCRAM-SHA-256"
    worker_app, _ = create_worker_app(s)
    assert worker_app.conf.broker_credentials.mechanism.value == "SCRAM-SHA-256"


@pytest.mark.parametrize("command", [["up", "--host", "0.0.0.0"], ["api"]])
def test_cli_refuses_to_serve_open_off_loopback_before_starting_anything(
    command: list[str], tmp_path
) -> None:
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith("TEMPR_")}
    env |= {
        "TEMPR_HOST": "0.0.0.0",
        "TEMPR_DATA_DIR": str(tmp_path),
        "TEMPR_DATABASE_URL": "postgresql://x@127.0.0.1:1/x",
    }
    out = subprocess.run(
        [sys.executable, "-m", "tempr.cli", *command], capture_output=True, text=True, timeout=120, env=env
    )
    assert out.returncode == 2, out.stderr
    assert "--insecure" in out.stderr and "TEMPR_AUTH=keys" in out.stderr
    assert list(tmp_path.iterdir()) == []  # nothing was started or written


async def test_time_limits_answer_504_for_slow_recall_and_reflect_only() -> None:
    import asyncio

    import httpx
    from fastapi import FastAPI

    from tempr.recall_api.time_limits import TimeLimits

    app = FastAPI()

    async def slow() -> dict:
        await asyncio.sleep(2)
        return {"done": True}

    for path in ("/v1/banks/{b}/recall", "/v1/banks/{b}/reflect", "/v1/banks/{b}/stats"):
        app.post(path)(slow)
    app.add_middleware(TimeLimits, settings=Settings(recall_timeout_s=0.2, reflect_timeout_s=0.3))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as client:
        recall, reflect, other = await asyncio.gather(
            client.post("/v1/banks/x/recall"),
            client.post("/v1/banks/x/reflect"),
            client.post("/v1/banks/x/stats"),
        )
    assert recall.status_code == 504 and "TEMPR_RECALL_TIMEOUT_S" in recall.json()["detail"]
    assert reflect.status_code == 504 and "0.3s" in reflect.json()["detail"]
    assert other.status_code == 200 and other.json() == {"done": True}
