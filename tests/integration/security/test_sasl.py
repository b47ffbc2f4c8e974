"""SASL/SCRAM over TLS on a node with a SASL_SSL client listener and an SSL inter-broker
listener (in-process node, real ZooKeeper): credentials salted in ZooKeeper in Kafka's format,
the right password lets a client in as its user, a wrong one is refused and told why."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from kazoo.client import KazooClient

from node.config import NodeConfig
from node.listeners import Listener
from node.security.authorizer import AuthorizerConfig
from node.security.tls import SslConfig
from node.server import Node
from odradek import Admin, Consumer, NewTopic, Producer, TopicPartition
from odradek.acl import (
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    ResourcePattern,
    ResourceType,
)
from odradek.admin import ScramDeletion, ScramUpsertion
from odradek.cli import main as cli
from odradek.client.errors import error_from_rpc
from odradek.errors import (
    ResourceNotFoundError,
    SaslAuthenticationFailedError,
    TopicAuthorizationFailedError,
    UnsupportedSaslMechanismError,
)
from odradek.scram import ScramCredential
from odradek.v1 import odradek_pb2 as pb
from odradek.v1 import odradek_pb2_grpc as pb_grpc
from tests.certs import CertificateAuthority
from tests.integration.helpers import wait_for


class Setup:
    def __init__(self, node: Node, tmp_path: Path, ca: CertificateAuthority) -> None:
        self.node = node
        self.sasl = f"localhost:{node.ports['SASL']}"
        self.internal = f"localhost:{node.ports['INTERNAL']}"
        self.cafile = str(ca.write(tmp_path / "ca.crt"))
        _, _, admin_pem = ca.issue("CN=admin").write(tmp_path, "admin")
        self.admin: dict[str, Any] = {
            "security_protocol": "SSL",
            "ssl_cafile": self.cafile,
            "ssl_certfile": str(admin_pem),
        }

    def user(self, name: str, password: str, mechanism: str = "SCRAM-SHA-256") -> dict[str, Any]:
        return {
            "security_protocol": "SASL_SSL",
            "ssl_cafile": self.cafile,
            "sasl_mechanism": mechanism,
            "sasl_plain_username": name,
            "sasl_plain_password": password,
        }


@pytest.fixture
def setup(tmp_path: Path, zk_connect: str) -> Iterator[Setup]:
    ca = CertificateAuthority("odradek-test-ca")
    _, _, keystore = ca.issue("CN=node-1", ["localhost", "127.0.0.1"]).write(tmp_path, "node-1")
    config = NodeConfig(
        node_id=1,
        log_dirs=(tmp_path / "data",),
        zookeeper_connect=zk_connect,
        listeners=(Listener("SASL", "127.0.0.1", 0), Listener("INTERNAL", "127.0.0.1", 0)),
        advertised_listeners=(
            Listener("SASL", "localhost", 0),
            Listener("INTERNAL", "localhost", 0),
        ),
        listener_security_protocol_map=(("SASL", "SASL_SSL"), ("INTERNAL", "SSL")),
        inter_broker_listener_name="INTERNAL",
        ssl=SslConfig(
            keystore_location=str(keystore), truststore_location=str(ca.write(tmp_path / "ca.crt"))
        ),
        listener_ssl=(
            (
                "INTERNAL",
                SslConfig(
                    keystore_location=str(keystore),
                    truststore_location=str(ca.write(tmp_path / "ca.crt")),
                    client_auth="required",
                ),
            ),
        ),
        authorizer=AuthorizerConfig(
            authorizer_class_name="kafka.security.authorizer.AclAuthorizer",
            super_users=("User:CN=node-1", "User:CN=admin"),
        ),
        zookeeper_session_timeout_ms=6_000,
    )
    node = Node(config)
    try:
        node.start()
        s = Setup(node, tmp_path, ca)
        with Admin(s.internal, **s.admin) as admin:
            wait_for(lambda: admin.cluster_metadata().brokers, "a live broker")
            assert admin.create_topics([NewTopic("orders", 1, 1)]) == {"orders": None}
            wait_for(
                lambda: admin.describe_topics(["orders"])["orders"].partitions[0].leader >= 0,
                "a leader",
            )
            assert admin.alter_user_scram_credentials(
                [
                    ScramUpsertion("alice", "SCRAM-SHA-256", "alice-secret", 8192),
                    ScramUpsertion("alice", "SCRAM-SHA-512", "alice-secret"),
                ]
            ) == {"alice": None}
            pattern = ResourcePattern(ResourceType.TOPIC, "orders")
            entry = AccessControlEntry("User:alice", "*", AclOperation.ALL, AclPermissionType.ALLOW)
            assert admin.create_acls([AclBinding(pattern, entry)]) == [None]
        yield s
    finally:
        node.stop(controlled=False)


def test_scram_users_produce_and_consume_as_themselves(setup: Setup, zk_connect: str) -> None:
    for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
        alice = setup.user("alice", "alice-secret", mechanism)
        with Producer(setup.sasl, **alice) as producer:
            producer.send("orders", mechanism.encode()).result(timeout=30)
    with Consumer(setup.sasl, auto_offset_reset="earliest", **alice) as consumer:
        consumer.assign([TopicPartition("orders", 0)])
        records = wait_for(lambda: consumer.poll(timeout_ms=500), "the records")
        assert [r.value for r in records][:2] == [b"SCRAM-SHA-256", b"SCRAM-SHA-512"]

    # the credential is stored salted, in Kafka's format (the change notice, also written, is
    # consumed by the controller)
    zk = KazooClient(hosts=zk_connect, timeout=10)
    zk.start(timeout=15)
    try:
        stored = json.loads(zk.get("/config/users/alice")[0])
    finally:
        zk.stop()
        zk.close()
    assert stored["version"] == 1 and set(stored["config"]) == {"SCRAM-SHA-256", "SCRAM-SHA-512"}
    credential = ScramCredential.decode(stored["config"]["SCRAM-SHA-256"])
    assert credential.iterations == 8192 and len(credential.stored_key) == 32
    assert "alice-secret" not in json.dumps(stored)


def test_a_wrong_password_an_unknown_user_or_no_session_are_refused(setup: Setup) -> None:
    for name, password in (("alice", "wrong"), ("mallory", "alice-secret")):
        with (
            Admin(setup.sasl, **setup.user(name, password)) as admin,
            pytest.raises(SaslAuthenticationFailedError, match="invalid credentials"),
        ):
            admin.list_topics()
    # a producer fails at once too, rather than retrying for max.block.ms
    with (
        Producer(setup.sasl, max_block_ms=600_000, **setup.user("alice", "wrong")) as producer,
        pytest.raises(SaslAuthenticationFailedError),
    ):
        producer.send("orders", b"x").result(timeout=600)
    bob = setup.user("bob", "x", "SCRAM-SHA-512")
    with Admin(setup.internal, **setup.admin) as admin:
        assert admin.alter_user_scram_credentials(
            [ScramUpsertion("bob", "SCRAM-SHA-256", "x")]
        ) == {"bob": None}
    with Admin(setup.sasl, **bob) as admin, pytest.raises(SaslAuthenticationFailedError):
        admin.list_topics()  # bob has no SCRAM-SHA-512 credential
    # authenticated, bob has no ACL on orders
    with (
        Admin(setup.sasl, **setup.user("bob", "x")) as admin,
        pytest.raises(TopicAuthorizationFailedError),
    ):
        admin.describe_topics(["orders"])["orders"]
    # a call without a session token
    with grpc.secure_channel(
        setup.sasl, grpc.ssl_channel_credentials(Path(setup.cafile).read_bytes())
    ) as channel:
        with pytest.raises(grpc.RpcError) as refused:
            pb_grpc.BrokerStub(channel).Metadata(pb.MetadataRequest(all_topics=True), timeout=10)
        assert refused.value.code() is grpc.StatusCode.UNAUTHENTICATED
        assert isinstance(error_from_rpc(refused.value, setup.sasl), SaslAuthenticationFailedError)
        answer = pb_grpc.SaslStub(channel).SaslHandshake(
            pb.SaslHandshakeRequest(mechanism="PLAIN"), timeout=10
        )
        assert answer.error_code == UnsupportedSaslMechanismError.code
        assert list(answer.mechanisms) == ["SCRAM-SHA-256", "SCRAM-SHA-512"]


def test_deleted_credentials_no_longer_authenticate(setup: Setup) -> None:
    with Admin(setup.internal, **setup.admin) as admin:
        assert admin.describe_user_scram_credentials() == {
            "alice": {"SCRAM-SHA-256": 8192, "SCRAM-SHA-512": 4096}
        }
        assert admin.alter_user_scram_credentials(
            deletions=[ScramDeletion("alice", "SCRAM-SHA-256")]
        ) == {"alice": None}
        with pytest.raises(ResourceNotFoundError):
            admin.describe_user_scram_credentials(["nobody"])
    with (
        Admin(setup.sasl, **setup.user("alice", "alice-secret")) as admin,
        pytest.raises(SaslAuthenticationFailedError),
    ):
        admin.list_topics()


def test_users_command_line(
    setup: Setup, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "admin.properties"
    config.write_text(
        f"security.protocol=SSL\nssl.truststore.location={setup.cafile}\n"
        f"ssl.keystore.location={setup.admin['ssl_certfile']}\n"
    )
    base = ["--bootstrap-server", setup.internal, "--command-config", str(config), "users"]
    assert (
        cli(
            [
                *base,
                "alter",
                "--entity-name",
                "carol",
                "--add-config",
                "SCRAM-SHA-512=[iterations=4096,password=carol-pw]",
            ]
        )
        == 0
    )
    assert "Completed updating config for user carol." in capsys.readouterr().out
    assert cli([*base, "describe", "--entity-name", "carol"]) == 0
    assert "SCRAM-SHA-512=iterations=4096" in capsys.readouterr().out
    client = tmp_path / "carol.properties"
    client.write_text(
        "security.protocol=SASL_SSL\n"
        f"ssl.truststore.location={setup.cafile}\n"
        "sasl.mechanism=SCRAM-SHA-512\n"
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
        'username="carol" password="carol-pw";\n'
    )
    assert (
        cli(["--bootstrap-server", setup.sasl, "--command-config", str(client), "topics", "list"])
        == 0
    )
    assert (
        cli(
            [
                *base,
                "alter",
                "--entity-name",
                "carol",
                "--add-config",
                "SCRAM-SHA-512=[iterations=100,password=x]",
            ]
        )
        == 1
    )
    assert "UNACCEPTABLE_CREDENTIAL" in capsys.readouterr().err
