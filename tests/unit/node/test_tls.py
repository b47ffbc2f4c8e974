"""TLS settings (Kafka's ssl.* names, PEM), keystore parsing and certificate reloading."""

from __future__ import annotations

from pathlib import Path

import pytest

from node.config import config_from_properties
from node.grpc_door.tls_credentials import CertificateReloader
from node.security.tls import SslConfig, load_certificates, split_pem
from odradek.errors import InvalidConfigError
from tests.certs import CertificateAuthority

BASE = {"node.id": "1", "log.dirs": "/d", "zookeeper.connect": "z:1"}


def test_ssl_settings_with_kafka_names_and_per_listener_overrides():
    config = config_from_properties(
        {
            **BASE,
            "listeners": "CLIENT://:9092,REPLICATION://:9093",
            "listener.security.protocol.map": "CLIENT:SSL,REPLICATION:SSL",
            "inter.broker.listener.name": "REPLICATION",
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": "/etc/odradek/node.pem",
            "ssl.truststore.location": "/etc/odradek/ca.crt",
            "ssl.client.auth": "Required",
            "listener.name.client.ssl.client.auth": "none",
            "listener.name.client.ssl.principal.mapping.rules": "RULE:^CN=(.*?),.*$/$1/,DEFAULT",
        }
    )
    assert config.ssl == SslConfig(
        keystore_location="/etc/odradek/node.pem",
        truststore_location="/etc/odradek/ca.crt",
        client_auth="required",
    )
    client = config.ssl_for("CLIENT")
    assert (client.client_auth, client.keystore_location) == ("none", "/etc/odradek/node.pem")
    assert client.principal_mapper.name("CN=a,O=b") == "a"
    assert config.ssl_for("REPLICATION").client_auth == "required"


@pytest.mark.parametrize(
    ("props", "message"),
    [
        ({"ssl.keystore.type": "JKS"}, "only PEM"),
        ({"ssl.client.auth": "maybe"}, "ssl.client.auth must be one of"),
        ({"ssl.client.auth": "required"}, "needs a truststore"),
        ({"ssl.keystore.key": "k"}, "go together"),
        ({"ssl.keystore.location": "/a", "ssl.keystore.key": "k"}, "either"),
        ({"ssl.principal.mapping.rules": "nonsense"}, "invalid rule"),
        ({"ssl.key.password": "secret"}, "unknown node config 'ssl.key.password'"),
    ],
)
def test_bad_ssl_settings(props, message):
    with pytest.raises(InvalidConfigError, match=message):
        config_from_properties({**BASE, **props})


def test_a_pem_keystore_is_split_into_key_and_chain():
    leaf = CertificateAuthority("ca").issue("CN=node-1")
    key, chain = split_pem(b"junk\n" + leaf.keystore_pem(), "keystore")
    assert (key, chain) == (leaf.key_pem, leaf.cert_pem)
    with pytest.raises(InvalidConfigError, match="no private key"):
        split_pem(leaf.cert_pem, "keystore")
    with pytest.raises(InvalidConfigError, match="no certificate"):
        split_pem(leaf.key_pem, "keystore")
    encrypted = (
        b"-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n"
    )
    with pytest.raises(InvalidConfigError, match="encrypted"):
        split_pem(encrypted + leaf.cert_pem, "keystore")


def test_a_key_that_does_not_match_its_certificate_is_refused(tmp_path: Path):
    ca = CertificateAuthority("ca")
    one, two = ca.issue("CN=one"), ca.issue("CN=two")
    (tmp_path / "ks.pem").write_bytes(one.key_pem + two.cert_pem)
    with pytest.raises(InvalidConfigError, match="do not match"):
        load_certificates(SslConfig(keystore_location=str(tmp_path / "ks.pem")), "CLIENT")
    with pytest.raises(InvalidConfigError, match="cannot read"):
        load_certificates(SslConfig(keystore_location=str(tmp_path / "nope.pem")), "CLIENT")


def test_changed_files_are_reloaded_and_a_half_written_rotation_is_not(tmp_path: Path):
    ca = CertificateAuthority("ca")
    first, second = ca.issue("CN=node"), ca.issue("CN=node")
    keystore = tmp_path / "node.pem"
    keystore.write_bytes(first.keystore_pem())
    config = SslConfig(
        keystore_location=str(keystore), truststore_location=str(ca.write(tmp_path / "ca.crt"))
    )
    reloader = CertificateReloader(config, "CLIENT")
    assert reloader.fetch() is None  # nothing changed
    # a rotation caught between writing the key and the certificate is not taken
    keystore.write_bytes(second.key_pem + first.cert_pem + b"\n")
    assert reloader.fetch() is None
    assert reloader.certificates.chain == first.cert_pem
    keystore.write_bytes(second.keystore_pem())
    assert reloader.fetch() is not None
    assert (reloader.certificates.key, reloader.reloads) == (second.key_pem, 1)
    assert reloader.fetch() is None
