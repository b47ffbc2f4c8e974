"""Security on the Kafka door, with confluent-kafka (librdkafka) as the client: SCRAM-SHA-512
over TLS (SASL_SSL) and SCRAM-SHA-256 in clear (SASL_PLAINTEXT) against the node's credential
store, mutual TLS (SSL, client certificates required) through the node's principal mapping, a
wrong password refused with Kafka's authentication error, and the node's ACLs on both: a
produce and a fetch of a topic the principal may not use refused with
TOPIC_AUTHORIZATION_FAILED, whichever door. One in-process node on a real ZooKeeper; its
gRPC listener (SSL, inter-broker) is how the test, as a super user, sets things up."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import (
    Consumer,
    KafkaError,
    KafkaException,
    Producer,
    TopicCollection,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient

from node.config import NodeConfig
from node.listeners import Listener
from node.security.authorizer import AuthorizerConfig
from node.security.tls import SslConfig
from node.server import Node
from odradek import Admin, NewTopic
from odradek.acl import (
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    ResourcePattern,
    ResourceType,
)
from odradek.admin import ScramUpsertion
from tests.certs import CertificateAuthority
from tests.integration.helpers import wait_for

GROUP_OPERATIONS = {"READ", "DESCRIBE", "DELETE", "DESCRIBE_CONFIGS", "ALTER_CONFIGS"}
"""Kafka 4's operations on a group (AclEntry.supportedOperations: its configs included)."""


@dataclass
class Secured:
    node: Node
    cafile: str
    alice_cert: tuple[Path, Path]
    stranger_cert: tuple[Path, Path]

    def address(self, listener: str) -> str:
        return f"localhost:{self.node.ports[listener]}"

    def scram(self, user: str, password: str, mechanism: str, tls: bool = True) -> dict[str, Any]:
        return {
            "bootstrap.servers": self.address("KSASL" if tls else "KCLEAR"),
            "security.protocol": "SASL_SSL" if tls else "SASL_PLAINTEXT",
            "ssl.ca.location": self.cafile,
            "sasl.mechanism": mechanism,
            "sasl.username": user,
            "sasl.password": password,
        }

    def mtls(self, cert: tuple[Path, Path] | None) -> dict[str, Any]:
        config: dict[str, Any] = {
            "bootstrap.servers": self.address("KMTLS"),
            "security.protocol": "SSL",
            "ssl.ca.location": self.cafile,
        }
        if cert is not None:
            config["ssl.certificate.location"] = str(cert[1])
            config["ssl.key.location"] = str(cert[0])
        return config


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory, zk_connect_module: str) -> Iterator[Secured]:
    tmp_path = tmp_path_factory.mktemp("secured")
    ca = CertificateAuthority("odradek-kafka-door-ca")
    cafile = ca.write(tmp_path / "ca.crt")
    _, _, keystore = ca.issue("CN=node-1", ["localhost", "127.0.0.1"]).write(tmp_path, "node-1")
    _, _, admin_pem = ca.issue("CN=admin").write(tmp_path, "admin")
    alice_key, alice_crt, _ = ca.issue("CN=alice").write(tmp_path, "alice")
    other_ca = CertificateAuthority("someone-else")
    stranger_key, stranger_crt, _ = other_ca.issue("CN=alice").write(tmp_path, "stranger")
    tls = SslConfig(keystore_location=str(keystore), truststore_location=str(cafile))
    required = SslConfig(
        keystore_location=str(keystore), truststore_location=str(cafile), client_auth="required"
    )
    listeners = ("INTERNAL", "KSASL", "KCLEAR", "KMTLS")
    config = NodeConfig(
        node_id=1,
        log_dirs=(tmp_path / "data",),
        zookeeper_connect=zk_connect_module,
        listeners=tuple(Listener(name, "127.0.0.1", 0) for name in listeners),
        advertised_listeners=tuple(Listener(name, "localhost", 0) for name in listeners),
        listener_security_protocol_map=(
            ("INTERNAL", "SSL"),
            ("KSASL", "SASL_SSL"),
            ("KCLEAR", "SASL_PLAINTEXT"),
            ("KMTLS", "SSL"),
        ),
        inter_broker_listener_name="INTERNAL",
        kafka_listener_names=("KSASL", "KCLEAR", "KMTLS"),
        ssl=tls,
        listener_ssl=(("INTERNAL", required), ("KMTLS", required)),
        authorizer=AuthorizerConfig(
            authorizer_class_name="kafka.security.authorizer.AclAuthorizer",
            super_users=("User:CN=node-1", "User:CN=admin"),
        ),
        zookeeper_session_timeout_ms=6_000,
    )
    node = Node(config)
    node.start()
    try:
        admin_tls: dict[str, Any] = {
            "security_protocol": "SSL",
            "ssl_cafile": str(cafile),
            "ssl_certfile": str(admin_pem),
        }
        with Admin(f"localhost:{node.ports['INTERNAL']}", **admin_tls) as admin:
            wait_for(lambda: admin.cluster_metadata().brokers, "a live broker")
            assert admin.create_topics([NewTopic(t, 1, 1) for t in ("orders", "secret")]) == {
                "orders": None,
                "secret": None,
            }

            def led() -> bool:
                found = admin.describe_topics(["orders", "secret"])
                return all(found[t].partitions[0].leader >= 0 for t in ("orders", "secret"))

            wait_for(led, "leaders")
            assert admin.alter_user_scram_credentials(
                [
                    ScramUpsertion("alice", "SCRAM-SHA-512", "alice-secret"),
                    ScramUpsertion("alice", "SCRAM-SHA-256", "alice-secret"),
                ]
            ) == {"alice": None}
            # alice may use "orders" and the consumers' group
            acls = [
                AclBinding(
                    pattern,
                    AccessControlEntry(who, "*", AclOperation.ALL, AclPermissionType.ALLOW),
                )
                for pattern in (
                    ResourcePattern(ResourceType.TOPIC, "orders"),
                    ResourcePattern(ResourceType.GROUP, "readers"),
                )
                for who in ("User:alice", "User:CN=alice")
            ]
            # on "secret" alice may only DESCRIBE: her produce and fetch reach the broker, which
            # refuses them (Kafka's testNoProduceWithDescribeAcl / testNoConsumeWithDescribeAcl...)
            acls += [
                AclBinding(
                    ResourcePattern(ResourceType.TOPIC, "secret"),
                    AccessControlEntry(who, "*", AclOperation.DESCRIBE, AclPermissionType.ALLOW),
                )
                for who in ("User:alice", "User:CN=alice")
            ]
            assert admin.create_acls(acls) == [None] * 6
        yield Secured(node, str(cafile), (alice_key, alice_crt), (stranger_key, stranger_crt))
    finally:
        node.stop(controlled=False)


def produce_one(config: dict[str, Any], topic: str, value: bytes) -> KafkaError | None:
    """Produces one record; the delivery error (``None``: delivered)."""
    producer = Producer({**config, "message.timeout.ms": 20_000})
    outcome: list[KafkaError | None] = []
    producer.produce(topic, value=value, on_delivery=lambda err, msg: outcome.append(err))
    producer.flush(30)
    assert outcome, "no delivery report within 30 s"
    return outcome[0]


def read_all(config: dict[str, Any], topic: str, count: int) -> list[bytes]:
    consumer = Consumer({**config, "group.id": "readers", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, 0)])
    values: list[bytes] = []
    deadline = time.monotonic() + 30  # noqa: TID251
    try:
        while len(values) < count and time.monotonic() < deadline:  # noqa: TID251
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            error = msg.error()
            if error is not None:
                raise KafkaException(error)
            values.append(msg.value() or b"")
    finally:
        consumer.close()
    return values


def test_scram_logins_produce_and_consume_as_their_user(secured: Secured) -> None:
    sha512 = secured.scram("alice", "alice-secret", "SCRAM-SHA-512")
    sha256_clear = secured.scram("alice", "alice-secret", "SCRAM-SHA-256", tls=False)
    assert produce_one(sha512, "orders", b"over-tls") is None
    assert produce_one(sha256_clear, "orders", b"in-clear") is None
    assert read_all(sha512, "orders", 2)[-2:] == [b"over-tls", b"in-clear"]


def test_a_wrong_password_is_refused_with_kafkas_authentication_error(secured: Secured) -> None:
    errors: list[KafkaError] = []
    producer = Producer(
        {
            **secured.scram("alice", "wrong", "SCRAM-SHA-512"),
            "error_cb": errors.append,
            "message.timeout.ms": 5_000,
        }
    )
    producer.produce("orders", value=b"never")
    producer.flush(10)
    assert any(e.code() == KafkaError._AUTHENTICATION for e in errors), errors
    assert any("invalid credentials" in e.str() for e in errors), errors


def test_mutual_tls_maps_the_certificate_to_its_principal(secured: Secured) -> None:
    alice = secured.mtls(secured.alice_cert)
    assert produce_one(alice, "orders", b"with-a-certificate") is None
    assert b"with-a-certificate" in read_all(alice, "orders", 3)
    # without a certificate, or with one from another CA, the handshake fails
    for cert in (None, secured.stranger_cert):
        errors: list[KafkaError] = []
        producer = Producer(
            {**secured.mtls(cert), "error_cb": errors.append, "message.timeout.ms": 5_000}
        )
        producer.produce("orders", value=b"never")
        producer.flush(10)
        assert any(
            e.code() in (KafkaError._SSL, KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN)
            for e in errors
        ), errors


@pytest.mark.parametrize("door", ["scram", "mtls"])
def test_produce_and_fetch_without_acls_are_refused(secured: Secured, door: str) -> None:
    config = (
        secured.scram("alice", "alice-secret", "SCRAM-SHA-512")
        if door == "scram"
        else secured.mtls(secured.alice_cert)
    )
    refused = produce_one(config, "secret", b"no")
    assert refused is not None and refused.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    with pytest.raises(KafkaException) as fetch_refused:
        read_all(config, "secret", 1)
    assert fetch_refused.value.args[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED


TOPIC_OPERATIONS = {
    *("READ", "WRITE", "CREATE", "DESCRIBE", "DELETE", "ALTER", "DESCRIBE_CONFIGS"),
    "ALTER_CONFIGS",
}


def test_authorized_operations_are_what_the_acls_allow(secured: Secured) -> None:
    """KIP-430 through confluent-kafka's admin client logged in as alice (Metadata v10's topic
    and cluster operations, and the group's): ALL on "orders" gives every topic operation,
    DESCRIBE alone on "secret" that one, ALL on the group "readers" every group operation, and
    no ACL on the cluster none (Kafka answers 0 to a caller that may not DESCRIBE it)."""
    admin = AdminClient(secured.scram("alice", "alice-secret", "SCRAM-SHA-512"))
    topics = admin.describe_topics(
        TopicCollection(["orders", "secret"]), include_authorized_operations=True
    )
    operations = {
        name: {op.name for op in future.result(timeout=30).authorized_operations}
        for name, future in topics.items()
    }
    assert operations == {"orders": TOPIC_OPERATIONS, "secret": {"DESCRIBE"}}
    cluster = admin.describe_cluster(include_authorized_operations=True).result(timeout=30)
    assert not cluster.authorized_operations, cluster.authorized_operations
    (group,) = admin.describe_consumer_groups(
        ["readers"], include_authorized_operations=True
    ).values()
    described = group.result(timeout=30)
    assert {op.name for op in described.authorized_operations} == GROUP_OPERATIONS
    # without asking, none are given
    (plain,) = admin.describe_topics(TopicCollection(["orders"])).values()
    assert not plain.result(timeout=30).authorized_operations
