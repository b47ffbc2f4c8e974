"""Client security settings: kafka-python's names, Kafka's client properties, PEM files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from odradek import Producer
from odradek.client.security import (
    SecurityConfig,
    from_kafka_properties,
    parse_properties,
    split_pem,
)
from odradek.spark.options import (
    OdradekSparkOptionError,
    parse_read_options,
    parse_write_options,
)
from tests.certs import CertificateAuthority


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"security_protocol": "TLS"}, "must be one of"),
        ({"security_protocol": "SASL_SSL"}, "SASL_SSL needs sasl_mechanism"),
        ({"security_protocol": "SASL_PLAINTEXT"}, "use SASL_SSL"),
        ({"ssl_cafile": "ca.crt"}, "need security_protocol SSL"),
        ({"security_protocol": "SSL", "ssl_keyfile": "k"}, "needs ssl_certfile"),
        ({"security_protocol": "SSL", "sasl_mechanism": "PLAIN"}, "sasl_mechanism must be"),
        ({"security_protocol": "SSL", "sasl_plain_username": "u"}, "need security_protocol"),
    ],
)
def test_bad_settings(settings, message):
    with pytest.raises(ValueError, match=message):
        SecurityConfig(**settings)


def test_the_sdk_takes_kafka_python_names_and_reads_the_files_at_once(tmp_path: Path):
    with pytest.raises(ValueError, match="ssl_cafile: cannot read"):
        Producer(
            "localhost:9092", security_protocol="SSL", ssl_cafile=str(tmp_path / "missing.crt")
        )
    with pytest.raises(TypeError):
        Producer("localhost:9092", ssl_password="x")  # type: ignore[call-arg]


def test_certificate_and_key_in_one_file_or_two(tmp_path: Path):
    ca = CertificateAuthority("ca")
    leaf = ca.issue("CN=alice")
    key, cert, both = leaf.write(tmp_path, "alice")
    cafile = str(ca.write(tmp_path / "ca.crt"))
    one_file: dict[str, Any] = {"ssl_certfile": str(both)}
    two_files: dict[str, Any] = {"ssl_certfile": str(cert), "ssl_keyfile": str(key)}
    for files in (one_file, two_files):
        config = SecurityConfig(security_protocol="SSL", ssl_cafile=cafile, **files)
        assert config.channel_credentials() is not None
    with pytest.raises(ValueError, match="no private key"):
        SecurityConfig(security_protocol="SSL", ssl_certfile=str(cert)).channel_credentials()
    assert split_pem(leaf.key_pem, "ssl_keyfile", need_key=True)[0] == leaf.key_pem
    assert SecurityConfig().channel_credentials() is None


def test_the_password_is_never_shown():
    config = SecurityConfig(
        security_protocol="SASL_SSL",
        sasl_mechanism="SCRAM-SHA-256",
        sasl_plain_username="alice",
        sasl_plain_password="s3cret",
    )
    assert "s3cret" not in repr(config)


def test_kafka_client_properties():
    props = parse_properties(
        "# client.properties\n"
        "security.protocol=SSL\n"
        "ssl.truststore.type=PEM\n"
        "ssl.truststore.location=/etc/ca.crt\n"
        "ssl.keystore.type: PEM\n"
        "ssl.keystore.location=/etc/alice.pem\n"
        "ssl.endpoint.identification.algorithm=https\n"
    )
    assert from_kafka_properties(props) == {
        "security_protocol": "SSL",
        "ssl_cafile": "/etc/ca.crt",
        "ssl_certfile": "/etc/alice.pem",
    }
    jaas = (
        "org.apache.kafka.common.security.scram.ScramLoginModule required "
        'username="alice" password="a \\"quoted\\" one";'
    )
    assert from_kafka_properties({"sasl.mechanism": "scram-sha-512", "sasl.jaas.config": jaas}) == {
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_plain_username": "alice",
        "sasl_plain_password": 'a \\"quoted\\" one',
    }
    with pytest.raises(ValueError, match="only PEM"):
        from_kafka_properties({"ssl.keystore.type": "JKS"})
    with pytest.raises(ValueError, match="unknown or unsupported client property"):
        from_kafka_properties({"ssl.key.password": "x"})
    with pytest.raises(ValueError, match="line 1"):
        parse_properties("no separator here")


def test_spark_options_take_kafka_prefixed_security_settings():
    opts = parse_write_options(
        {
            "kafka.bootstrap.servers": "localhost:9092",
            "topic": "t",
            "kafka.security.protocol": "SSL",
            "kafka.ssl.truststore.location": "/etc/ca.crt",
        }
    )
    assert opts.security == SecurityConfig(security_protocol="SSL", ssl_cafile="/etc/ca.crt")
    with pytest.raises(OdradekSparkOptionError, match="must be one of") as bad:
        parse_write_options({"kafka.bootstrap.servers": "h:1", "kafka.security.protocol": "X"})
    assert bad.value.option == "kafka.security.protocol"
    read = parse_read_options(
        {
            "kafka.bootstrap.servers": "h:1",
            "subscribe": "t",
            "kafka.security.protocol": "SASL_SSL",
            "kafka.ssl.truststore.location": "/etc/ca.crt",
            "kafka.sasl.mechanism": "SCRAM-SHA-256",
            "kafka.sasl.jaas.config": 'x required username="u" password="p";',
        },
        streaming=False,
    )
    assert read.security.options()["sasl_plain_username"] == "u"
    assert (
        parse_read_options(
            {"kafka.bootstrap.servers": "h:1", "subscribe": "t"}, streaming=False
        ).security
        == SecurityConfig()
    )
