"""``ssl.client.auth=requested`` (Kafka's semantics): the node asks for a client certificate and
accepts clients without one. A client with a certificate is ``User:<mapped subject>``, one
without is ``User:ANONYMOUS`` (each seen through the authorizer: a super user by certificate,
an ACL for ANONYMOUS), a certificate of another CA fails the handshake, and a connection that
bypasses the node's TLS (the loopback port it relays to) is refused. In-process node, real
ZooKeeper."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from node.config import NodeConfig
from node.listeners import Listener
from node.security.authorizer import AuthorizerConfig
from node.security.tls import SslConfig
from node.security.tls_terminator import rfc2253_subject
from node.server import Node
from odradek import Admin, NewTopic, Producer
from odradek.acl import (
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from odradek.errors import OdradekError, TopicAuthorizationFailedError
from odradek.v1 import odradek_pb2 as pb
from odradek.v1 import odradek_pb2_grpc as pb_grpc
from tests.certs import CertificateAuthority
from tests.integration.helpers import wait_for


class Requested:
    def __init__(self, node: Node, tmp_path: Path, ca: CertificateAuthority) -> None:
        self.node = node
        self.bootstrap = f"localhost:{node.port}"
        self.cafile = str(ca.write(tmp_path / "ca.crt"))
        _, _, alice = ca.issue("CN=alice,OU=Users").write(tmp_path, "alice")
        self.alice = str(alice)
        stranger_ca = CertificateAuthority("another-ca")
        _, _, stranger = stranger_ca.issue("CN=alice,OU=Users").write(tmp_path, "stranger")
        self.stranger = str(stranger)

    def security(self, certfile: str | None = None) -> dict[str, Any]:
        options: dict[str, Any] = {"security_protocol": "SSL", "ssl_cafile": self.cafile}
        if certfile is not None:
            options["ssl_certfile"] = certfile
        return options


@pytest.fixture
def requested(tmp_path: Path, zk_connect: str) -> Iterator[Requested]:
    ca = CertificateAuthority("odradek-test-ca")
    _, _, keystore = ca.issue("CN=node-1,OU=Brokers", ["localhost", "127.0.0.1"]).write(
        tmp_path, "node-1"
    )
    config = NodeConfig(
        node_id=1,
        log_dirs=(tmp_path / "data",),
        zookeeper_connect=zk_connect,
        listeners=(Listener("SSL", "127.0.0.1", 0),),
        advertised_listeners=(Listener("SSL", "localhost", 0),),
        ssl=SslConfig(
            keystore_location=str(keystore),
            truststore_location=str(ca.write(tmp_path / "ca.crt")),
            client_auth="requested",
            principal_mapping_rules="RULE:^CN=(.*?),OU=Users$/$1/,DEFAULT",
        ),
        authorizer=AuthorizerConfig(
            authorizer_class_name="kafka.security.authorizer.AclAuthorizer",
            # the node itself (its controller calls it with its certificate) and alice
            super_users=("User:CN=node-1,OU=Brokers", "User:alice"),
        ),
        zookeeper_session_timeout_ms=6_000,
    )
    node = Node(config)
    try:
        node.start()
        yield Requested(node, tmp_path, ca)
    finally:
        node.stop(controlled=False)


def test_a_client_with_a_certificate_is_its_principal(requested: Requested) -> None:
    with Admin(requested.bootstrap, **requested.security(requested.alice)) as admin:
        # only User:alice (a super user) may create topics here: the certificate was read
        assert admin.create_topics([NewTopic("orders", 1, 1)]) == {"orders": None}

        def led() -> bool:
            return admin.describe_topics(["orders"])["orders"].partitions[0].leader >= 0

        wait_for(led, "a leader of orders")
    with Producer(requested.bootstrap, **requested.security(requested.alice)) as producer:
        assert producer.send("orders", b"by alice").result(timeout=30).offset == 0


def test_a_client_without_a_certificate_is_anonymous(requested: Requested) -> None:
    with Admin(requested.bootstrap, **requested.security(requested.alice)) as admin:
        admin.create_topics([NewTopic("public", 1, 1)])
        wait_for(
            lambda: admin.describe_topics(["public"])["public"].partitions[0].leader >= 0,
            "a leader of public",
        )
    # accepted without a certificate, as User:ANONYMOUS: no ACL yet, so refused by the
    # authorizer (not by the handshake)
    with (
        Producer(requested.bootstrap, max_block_ms=10_000, **requested.security()) as producer,
        pytest.raises(TopicAuthorizationFailedError),
    ):
        producer.send("public", b"x").result(timeout=30)
    with Admin(requested.bootstrap, **requested.security(requested.alice)) as admin:
        pattern = ResourcePattern(ResourceType.TOPIC, "public", PatternType.LITERAL)
        grants = [
            AclBinding(
                pattern, AccessControlEntry("User:ANONYMOUS", "*", op, AclPermissionType.ALLOW)
            )
            for op in (AclOperation.WRITE, AclOperation.DESCRIBE)
        ]
        assert admin.create_acls(grants) == [None, None]

    def anonymous_writes() -> bool:
        with Producer(requested.bootstrap, max_block_ms=5_000, **requested.security()) as p:
            return p.send("public", b"anonymous").result(timeout=30).offset >= 0

    wait_for(anonymous_writes, "User:ANONYMOUS to be allowed to write (the ACL applied)")


def test_a_certificate_of_another_ca_fails_the_handshake(requested: Requested) -> None:
    with (
        Admin(
            requested.bootstrap, request_timeout_ms=5_000, **requested.security(requested.stranger)
        ) as admin,
        pytest.raises(OdradekError),
    ):
        admin.list_topics()


def test_the_relayed_port_refuses_a_direct_connection(requested: Requested) -> None:
    (terminator,) = requested.node._terminators
    with grpc.insecure_channel(f"127.0.0.1:{terminator.backend_port}") as channel:
        stub = pb_grpc.BrokerStub(channel)
        with pytest.raises(grpc.RpcError) as refused:
            stub.Metadata(pb.MetadataRequest(), timeout=5)
    assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED


def test_the_subject_reads_as_grpcs_x509_subject() -> None:
    cert = {
        "subject": (
            (("countryName", "DE"),),
            (("organizationName", "Example, Inc."),),
            (("organizationalUnitName", "Users"),),
            (("commonName", "alice"),),
        )
    }
    assert rfc2253_subject(cert) == "CN=alice,OU=Users,O=Example\\, Inc.,C=DE"


def test_a_rotated_certificate_is_served_without_a_restart(
    requested: Requested, tmp_path: Path
) -> None:
    with Admin(requested.bootstrap, **requested.security(requested.alice)) as admin:
        admin.list_topics()
    new_ca = CertificateAuthority("new-ca")
    old_ca_pem = (tmp_path / "ca.crt").read_bytes()
    (tmp_path / "ca.crt").write_bytes(old_ca_pem + new_ca.cert_pem)
    renewed = new_ca.issue("CN=node-1,OU=Brokers", ["localhost", "127.0.0.1"])
    (tmp_path / "node-1.pem").write_bytes(renewed.keystore_pem())
    new_cafile = str(new_ca.write(tmp_path / "new-ca.crt"))
    # a new connection gets the new certificate: a client trusting only the new CA gets in
    # (with alice's certificate of the old CA, still in the truststore) ...
    with Admin(
        requested.bootstrap,
        security_protocol="SSL",
        ssl_cafile=new_cafile,
        ssl_certfile=requested.alice,
    ) as admin:
        assert "orders" not in admin.list_topics()
    # ... and one trusting only the old CA no longer does
    old_cafile = tmp_path / "old-ca.crt"
    old_cafile.write_bytes(old_ca_pem)
    with (
        Admin(
            requested.bootstrap,
            request_timeout_ms=5_000,
            security_protocol="SSL",
            ssl_cafile=str(old_cafile),
        ) as admin,
        pytest.raises(OdradekError),
    ):
        admin.list_topics()
    (terminator,) = requested.node._terminators
    assert terminator.reloads == 1
