"""ACLs on a node with an SSL listener and mTLS principals (in-process node, real ZooKeeper):
no ACL means a typed error and no data, deny beats allow, prefixed ACLs match, a client
principal calling LeaderAndIsr is refused, and ACLs reach other nodes through ZooKeeper."""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from kazoo.client import KazooClient

from node.config import NodeConfig
from node.listeners import Listener
from node.security.authorizer import AclAuthorizer, AuthorizerConfig
from node.security.tls import SslConfig
from node.server import Node
from odradek import Admin, Consumer, NewTopic, Producer, TopicPartition
from odradek.acl import (
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from odradek.cli import main as cli
from odradek.client.errors import error_from_rpc
from odradek.clock import SystemClock
from odradek.errors import (
    ClusterAuthorizationFailedError,
    SecurityDisabledError,
    TopicAuthorizationFailedError,
)
from odradek.v1 import odradek_pb2 as pb
from odradek.v1 import odradek_pb2_grpc as pb_grpc
from tests.certs import CertificateAuthority
from tests.integration.helpers import wait_for

AUTHORIZER = "kafka.security.authorizer.AclAuthorizer"
ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY


class Cluster:
    def __init__(self, node: Node, tmp_path: Path, ca: CertificateAuthority) -> None:
        self.node = node
        self.bootstrap = f"localhost:{node.port}"
        self.cafile = str(ca.write(tmp_path / "ca.crt"))
        self.pems: dict[str, str] = {}
        for user in ("admin", "alice"):
            _, _, pem = ca.issue(f"CN={user},OU=Users").write(tmp_path, user)
            self.pems[user] = str(pem)

    def security(self, user: str) -> dict[str, Any]:
        return {
            "security_protocol": "SSL",
            "ssl_cafile": self.cafile,
            "ssl_certfile": self.pems[user],
        }


def _config(tmp_path: Path, zk_connect: str, ca: CertificateAuthority, **kw: Any) -> NodeConfig:
    _, _, keystore = ca.issue("CN=node-1,OU=Brokers", ["localhost", "127.0.0.1"]).write(
        tmp_path, "node-1"
    )
    return NodeConfig(
        node_id=1,
        log_dirs=(tmp_path / "data",),
        zookeeper_connect=zk_connect,
        listeners=(Listener("SSL", "127.0.0.1", 0),),
        advertised_listeners=(Listener("SSL", "localhost", 0),),
        ssl=SslConfig(
            keystore_location=str(keystore),
            truststore_location=str(ca.write(tmp_path / "ca.crt")),
            client_auth="required",
            principal_mapping_rules="RULE:^CN=(.*?),OU=Users$/$1/,DEFAULT",
        ),
        zookeeper_session_timeout_ms=6_000,
        **kw,
    )


@pytest.fixture
def cluster(tmp_path: Path, zk_connect: str) -> Iterator[Cluster]:
    ca = CertificateAuthority("odradek-test-ca")
    config = _config(
        tmp_path,
        zk_connect,
        ca,
        authorizer=AuthorizerConfig(
            authorizer_class_name=AUTHORIZER,
            # the node itself (controller -> node) and the operator
            super_users=("User:CN=node-1,OU=Brokers", "User:admin"),
        ),
    )
    node = Node(config)
    try:
        node.start()
        c = Cluster(node, tmp_path, ca)
        with Admin(c.bootstrap, **c.security("admin")) as admin:
            wait_for(lambda: admin.cluster_metadata().brokers, "a live broker")
            created = admin.create_topics(
                [NewTopic(t, 1, 1) for t in ("orders", "payments", "logs-app", "other")]
            )
            assert created == dict.fromkeys(created)

            def led(topic: str) -> bool:
                return admin.describe_topics([topic])[topic].partitions[0].leader >= 0

            for topic in created:
                wait_for(functools.partial(led, topic), f"a leader of {topic}")
        yield c
    finally:
        node.stop(controlled=False)


def _allow(
    admin: Admin,
    pattern: ResourcePattern,
    *ops: AclOperation,
    who: str = "User:alice",
    permission: AclPermissionType = ALLOW,
) -> None:
    bindings = [AclBinding(pattern, AccessControlEntry(who, "*", op, permission)) for op in ops]
    assert admin.create_acls(bindings) == [None] * len(bindings)


def _produce(c: Cluster, topic: str) -> None:
    with Producer(c.bootstrap, **c.security("alice")) as producer:
        producer.send(topic, b"x").result(timeout=30)


def test_without_an_acl_alice_gets_a_typed_error_and_no_data(cluster: Cluster) -> None:
    with Producer(cluster.bootstrap, **cluster.security("admin")) as producer:
        producer.send("orders", b"secret").result(timeout=30)
    with pytest.raises(TopicAuthorizationFailedError):
        _produce(cluster, "orders")
    with Admin(cluster.bootstrap, **cluster.security("alice")) as admin:
        # Metadata: the topics she may not describe are hidden, or refused when named
        assert admin.list_topics() == []
        with pytest.raises(TopicAuthorizationFailedError):
            admin.describe_topics(["orders"])["orders"]
        # not even whether a topic exists leaks
        with pytest.raises(TopicAuthorizationFailedError):
            admin.describe_topics(["no-such-topic"])["no-such-topic"]
        assert isinstance(
            admin.create_topics([NewTopic("mine", 1, 1)])["mine"], TopicAuthorizationFailedError
        )
        with pytest.raises(ClusterAuthorizationFailedError):
            admin.describe_acls()
    # a fetch by hand: the partition's answer is the error, with no records
    with grpc.secure_channel(
        cluster.bootstrap,
        grpc.ssl_channel_credentials(
            Path(cluster.cafile).read_bytes(),
            Path(cluster.pems["alice"]).read_bytes(),
            Path(cluster.pems["alice"]).read_bytes(),
        ),
    ) as channel:
        answer = pb_grpc.BrokerStub(channel).Fetch(
            pb.FetchRequest(
                max_wait_ms=0,
                max_bytes=1 << 20,
                partitions=[
                    pb.FetchPartition(topic="orders", fetch_offset=0, partition_max_bytes=1 << 20)
                ],
            ),
            timeout=10,
        )
        [partition] = answer.partitions
        assert partition.error_code == TopicAuthorizationFailedError.code
        assert partition.records == b""

    # once allowed, she reads it
    with Admin(cluster.bootstrap, **cluster.security("admin")) as admin:
        _allow(admin, ResourcePattern(ResourceType.TOPIC, "orders"), AclOperation.READ)
    with Consumer(
        cluster.bootstrap, auto_offset_reset="earliest", **cluster.security("alice")
    ) as consumer:
        consumer.assign([TopicPartition("orders", 0)])
        records = wait_for(lambda: consumer.poll(timeout_ms=500), "the record")
        assert [r.value for r in records] == [b"secret"]
    with Admin(cluster.bootstrap, **cluster.security("alice")) as admin:
        assert admin.list_topics() == ["orders"]  # READ implies DESCRIBE


def test_deny_beats_allow_and_prefixed_acls_match(cluster: Cluster) -> None:
    with Admin(cluster.bootstrap, **cluster.security("admin")) as admin:
        _allow(admin, ResourcePattern(ResourceType.TOPIC, "*"), AclOperation.ALL)
        _allow(
            admin,
            ResourcePattern(ResourceType.TOPIC, "orders"),
            AclOperation.WRITE,
            permission=DENY,
        )
        _allow(
            admin,
            ResourcePattern(ResourceType.TOPIC, "logs-", PatternType.PREFIXED),
            AclOperation.WRITE,
            who="User:bob",
        )
    _produce(cluster, "payments")
    with pytest.raises(TopicAuthorizationFailedError):
        _produce(cluster, "orders")
    auth = cluster.node.authorizer
    assert auth is not None
    assert auth.authorize(
        "User:bob", "127.0.0.1", AclOperation.WRITE, ResourceType.TOPIC, "logs-app"
    )
    assert not auth.authorize(
        "User:bob", "127.0.0.1", AclOperation.WRITE, ResourceType.TOPIC, "other"
    )
    with Admin(cluster.bootstrap, **cluster.security("admin")) as admin:
        deleted = admin.delete_acls(
            [
                AclBindingFilter(
                    resource_type=ResourceType.TOPIC,
                    name="orders",
                    pattern_type=PatternType.LITERAL,
                )
            ]
        )
        assert [b.entry.permission_type for b in deleted[0]] == [DENY]
    _produce(cluster, "orders")


def test_a_client_principal_calling_leader_and_isr_is_refused(cluster: Cluster) -> None:
    pem = Path(cluster.pems["alice"]).read_bytes()
    credentials = grpc.ssl_channel_credentials(Path(cluster.cafile).read_bytes(), pem, pem)
    with grpc.secure_channel(cluster.bootstrap, credentials) as channel:
        for call in (
            lambda: pb_grpc.ReplicationStub(channel).LeaderAndIsr(
                pb.LeaderAndIsrRequest(controller_id=1, controller_epoch=99), timeout=10
            ),
            lambda: pb_grpc.ReplicationStub(channel).Fetch(
                pb.FetchRequest(replica_id=2), timeout=10
            ),
            lambda: pb_grpc.ControllerStub(channel).ControlledShutdown(
                pb.ControlledShutdownRequest(broker_id=1, broker_epoch=1), timeout=10
            ),
        ):
            with pytest.raises(grpc.RpcError) as refused:
                call()
            error = error_from_rpc(refused.value, cluster.bootstrap)
            assert isinstance(error, ClusterAuthorizationFailedError), error
            assert "User:alice may not ClusterAction" in str(error)


def test_acls_are_kept_in_zookeeper_in_kafka_layout_and_reach_other_nodes(
    cluster: Cluster, zk_connect: str
) -> None:
    zk = KazooClient(hosts=zk_connect, timeout=10)
    zk.start(timeout=15)
    try:
        # another node's authorizer, started before the change: it learns it by the watch
        other = AclAuthorizer(zk, AuthorizerConfig(AUTHORIZER), SystemClock())
        other.start()
        with Admin(cluster.bootstrap, **cluster.security("admin")) as admin:
            _allow(admin, ResourcePattern(ResourceType.TOPIC, "orders"), AclOperation.READ)
            _allow(
                admin,
                ResourcePattern(ResourceType.TOPIC, "logs-", PatternType.PREFIXED),
                AclOperation.WRITE,
            )
        data, _ = zk.get("/kafka-acl/Topic/orders")
        assert json.loads(data) == {
            "version": 1,
            "acls": [
                {
                    "principal": "User:alice",
                    "permissionType": "Allow",
                    "operation": "Read",
                    "host": "*",
                }
            ],
        }
        assert zk.exists("/kafka-acl-extended/prefixed/Topic/logs-")
        changes = [
            zk.get(f"/kafka-acl-changes/{c}")[0] for c in zk.get_children("/kafka-acl-changes")
        ]
        assert b"Topic:orders" in changes
        extended = [
            json.loads(zk.get(f"/kafka-acl-extended-changes/{c}")[0])
            for c in zk.get_children("/kafka-acl-extended-changes")
        ]
        assert {
            "version": 1,
            "resourceType": "Topic",
            "name": "logs-",
            "patternType": "PREFIXED",
        } in extended
        wait_for(
            lambda: other.authorize(
                "User:alice", "h", AclOperation.WRITE, ResourceType.TOPIC, "logs-x"
            ),
            "the other node's cache to learn the prefixed ACL",
        )
        assert other.authorize("User:alice", "h", AclOperation.READ, ResourceType.TOPIC, "orders")
    finally:
        zk.stop()
        zk.close()


def test_acls_command_line(
    cluster: Cluster, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "admin.properties"
    config.write_text(
        f"security.protocol=SSL\nssl.truststore.location={cluster.cafile}\n"
        f"ssl.keystore.location={cluster.pems['admin']}\n"
    )
    base = ["--bootstrap-server", cluster.bootstrap, "--command-config", str(config), "acls"]
    assert (
        cli(
            [
                *base,
                "add",
                "--allow-principal",
                "User:alice",
                "--operation",
                "Write",
                "--topic",
                "logs-",
                "--resource-pattern-type",
                "prefixed",
            ]
        )
        == 0
    )
    assert (
        cli(
            [
                *base,
                "add",
                "--deny-principal",
                "User:alice",
                "--operation",
                "Read",
                "--topic",
                "orders",
            ]
        )
        == 0
    )
    capsys.readouterr()
    assert cli([*base, "list"]) == 0
    out = capsys.readouterr().out
    assert "ResourcePattern(resourceType=TOPIC, name=logs-, patternType=PREFIXED)" in out
    assert "(principal=User:alice, host=*, operation=WRITE, permissionType=ALLOW)" in out
    assert "(principal=User:alice, host=*, operation=READ, permissionType=DENY)" in out
    assert cli([*base, "list", "--topic", "orders"]) == 0
    out = capsys.readouterr().out
    assert "orders" in out and "logs-" not in out
    _produce(cluster, "logs-app")
    assert cli([*base, "remove", "--topic", "logs-", "--resource-pattern-type", "prefixed"]) == 0
    assert "Removed ACLs" in capsys.readouterr().out
    with pytest.raises(TopicAuthorizationFailedError):
        _produce(cluster, "logs-app")
    assert cli([*base, "add", "--allow-principal", "alice", "--topic", "t"]) == 1
    assert "not a principal" in capsys.readouterr().err


def test_acl_calls_without_an_authorizer_are_security_disabled(
    tmp_path: Path, zk_connect: str
) -> None:
    ca = CertificateAuthority("ca")
    node = Node(_config(tmp_path, zk_connect, ca))
    try:
        node.start()
        c = Cluster(node, tmp_path, ca)
        with Admin(c.bootstrap, **c.security("alice")) as admin:
            with pytest.raises(SecurityDisabledError):
                admin.describe_acls()
            [error] = admin.create_acls(
                [
                    AclBinding(
                        ResourcePattern(ResourceType.TOPIC, "t"),
                        AccessControlEntry("User:a", "*", AclOperation.READ, ALLOW),
                    )
                ]
            )
            assert isinstance(error, SecurityDisabledError)
    finally:
        node.stop(controlled=False)
