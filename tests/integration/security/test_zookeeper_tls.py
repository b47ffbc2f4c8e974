"""TLS to ZooKeeper and ``zookeeper.set.acl``, on a real ZooKeeper serving TLS (Debian's 3.8,
NettyServerCnxnFactory, x509 authentication) and three node processes on the certificates of
scripts/dev-certs.sh: the nodes reach ZooKeeper only over TLS, their znodes belong to the nodes'
shared ZooKeeper identity, the cluster works (produce, consume, a controller failover that
rewrites znodes another node created), and a ZooKeeper client without that certificate (on
the plaintext port, or over TLS with another certificate) can read the cluster's znodes but
not change them (NoAuth), nor read SCRAM credentials."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError
from kazoo.security import ACL, Id

from controller.zk_connection import ZkClientConfig, new_zk_client
from deploy.local.cluster import (
    ROOT,
    LocalCluster,
    zookeeper_tls,
    zookeeper_tls_overrides,
)
from deploy.local.zookeeper import ZooKeeperServer
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
from odradek.admin import ScramUpsertion
from odradek.errors import InvalidConfigError
from tests.integration.helpers import consume_all, wait_for, wait_for_full_isr

BROKERS_ID = "CN=odradek,OU=Brokers"
CHROOT = "/secure"


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("zk-tls") / "certs"
    subprocess.run(
        ["bash", str(ROOT / "scripts" / "dev-certs.sh"), str(directory), "3"],
        check=True,
        capture_output=True,
    )
    return directory


@pytest.fixture(scope="module")
def tls_zookeeper(
    certs: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ZooKeeperServer]:
    server = ZooKeeperServer(tmp_path_factory.mktemp("zk-tls-server"), tls=zookeeper_tls(certs))
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def cluster(
    tls_zookeeper: ZooKeeperServer, certs: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalCluster]:
    overrides = {
        **zookeeper_tls_overrides(certs),
        # ACLs stored (the authorizer on, everything allowed where no ACL names a resource)
        "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
        "allow.everyone.if.no.acl.found": "true",
    }
    local = LocalCluster(
        tmp_path_factory.mktemp("zk-tls-cluster"),
        3,
        zookeeper=tls_zookeeper,
        chroot=CHROOT,
        overrides=overrides,
        zookeeper_tls=zookeeper_tls(certs),
    )
    try:
        local.start()
        yield local
    finally:
        for node in local.nodes:
            node.kill()


def _client(connect: str, **kwargs: object) -> Iterator[KazooClient]:
    client = KazooClient(hosts=connect, timeout=10, **kwargs)
    client.start(timeout=20)
    try:
        yield client
    finally:
        client.stop()
        client.close()


@pytest.fixture
def outsider(tls_zookeeper: ZooKeeperServer) -> Iterator[KazooClient]:
    """A client on ZooKeeper's plaintext port: no identity at all."""
    yield from _client(tls_zookeeper.connect_string + CHROOT)


@pytest.fixture
def other_certificate(tls_zookeeper: ZooKeeperServer, certs: Path) -> Iterator[KazooClient]:
    """A client over TLS with a certificate of the same CA that is not the nodes'."""
    yield from _client(
        tls_zookeeper.secure_connect_string + CHROOT,
        use_ssl=True,
        ca=str(certs / "ca.crt"),
        certfile=str(certs / "client.pem"),
        keyfile=str(certs / "client.pem"),
    )


@pytest.fixture
def as_the_nodes(tls_zookeeper: ZooKeeperServer, certs: Path) -> Iterator[KazooClient]:
    """A client with the nodes' own ZooKeeper certificate (their shared identity)."""
    yield from _client(
        tls_zookeeper.secure_connect_string + CHROOT,
        use_ssl=True,
        ca=str(certs / "ca.crt"),
        certfile=str(certs / "zk-client.pem"),
        keyfile=str(certs / "zk-client.pem"),
    )


def _populated(cluster: LocalCluster) -> str:
    """A topic with records, an ACL and a SCRAM user: every kind of znode the nodes write."""
    topic = "secured"
    with Admin(cluster.bootstrap_servers) as admin:
        if topic not in admin.list_topics():
            admin.create_topics([NewTopic(topic, 1, 3)])
            wait_for_full_isr(admin, topic)
            # on another name: an ACL on the topic itself would shut ANONYMOUS out of it
            pattern = ResourcePattern(ResourceType.TOPIC, "guarded", PatternType.LITERAL)
            entry = AccessControlEntry(
                "User:alice", "*", AclOperation.READ, AclPermissionType.ALLOW
            )
            assert admin.create_acls([AclBinding(pattern, entry)]) == [None]
            admin.alter_user_scram_credentials(
                [ScramUpsertion("alice", "SCRAM-SHA-256", "alice-secret", 4096)]
            )
    return topic


def test_the_nodes_work_over_zookeeper_tls_and_own_their_znodes(
    cluster: LocalCluster,
    tls_zookeeper: ZooKeeperServer,
    outsider: KazooClient,
    as_the_nodes: KazooClient,
) -> None:
    topic = _populated(cluster)
    # every node is connected to the TLS port, none to the plaintext one
    for node in cluster.nodes:
        assert node.zookeeper_connect == tls_zookeeper.secure_connect_string + CHROOT
    with Producer(cluster.bootstrap_servers) as producer:
        producer.send(topic, b"one").result(timeout=30)
    # znodes carry the creator's x509 identity, plus world read (Kafka's defaultAcls)
    creator = ACL(31, Id("x509", BROKERS_ID))
    world_read = ACL(1, Id("world", "anyone"))
    for path in (
        "/brokers/ids/0",
        f"/brokers/topics/{topic}",
        f"/brokers/topics/{topic}/partitions/0/state",
        f"/config/topics/{topic}",
        "/kafka-acl/Topic/guarded",
        "/controller",
    ):
        acls, _ = outsider.get_acls(path)
        assert sorted(acls, key=str) == sorted([creator, world_read], key=str), path
    # credentials: the creator only (a sensitive path; an outsider cannot even read its ACL)
    acls, _ = as_the_nodes.get_acls("/config/users/alice")
    assert acls == [creator]
    with pytest.raises(NoAuthError):
        outsider.get_acls("/config/users/alice")
    # the nodes' identity may change what the nodes made (what a second controller needs)
    as_the_nodes.set(f"/config/topics/{topic}", as_the_nodes.get(f"/config/topics/{topic}")[0])


def _refused(client: KazooClient, topic: str) -> list[Callable[[], object]]:
    return [
        lambda: client.set(f"/brokers/topics/{topic}", b"{}"),
        lambda: client.set(f"/brokers/topics/{topic}/partitions/0/state", b"{}"),
        lambda: client.delete("/brokers/ids/0"),
        lambda: client.create("/brokers/ids/99", b"{}", ephemeral=True),
        lambda: client.create("/brokers/topics/planted", b"{}"),
        lambda: client.set(f"/config/topics/{topic}", b"{}"),
        lambda: client.create("/config/changes/config_change_", b"{}", sequence=True),
        lambda: client.set("/kafka-acl/Topic/guarded", b'{"version":1,"acls":[]}'),
        lambda: client.create("/kafka-acl/Topic/planted", b"{}"),
        lambda: client.delete("/controller"),
        lambda: client.create("/admin/delete_topics/" + topic, b""),
        lambda: client.get("/config/users/alice"),
    ]


@pytest.mark.parametrize("who", ["outsider", "other_certificate"])
def test_a_client_without_the_nodes_certificate_cannot_change_znodes(
    cluster: LocalCluster, who: str, request: pytest.FixtureRequest
) -> None:
    topic = _populated(cluster)
    client: KazooClient = request.getfixturevalue(who)
    # reading is allowed (Kafka's world-readable ACLs), except credentials
    assert client.get(f"/brokers/topics/{topic}")[0]
    for attempt in _refused(client, topic):
        with pytest.raises(NoAuthError):
            attempt()


def test_a_controller_failover_rewrites_znodes_another_node_created(
    cluster: LocalCluster, outsider: KazooClient
) -> None:
    topic = _populated(cluster)
    data, _ = outsider.get("/controller")
    old = json.loads(data)["brokerid"]
    cluster.node(old).stop()
    try:

        def new_controller() -> int | None:
            raw, _ = outsider.get("/controller")
            broker = json.loads(raw)["brokerid"]
            return broker + 1 if broker != old else None  # +1: node 0 is falsy

        wait_for(new_controller, "another controller")
        with Admin(cluster.bootstrap_servers) as admin:
            # the new controller creates a topic (znodes under /brokers/topics another node
            # made) and elects leaders away from the stopped node (state znodes)
            admin.create_topics([NewTopic("after-failover", 1, 2)])
            wait_for(
                lambda: admin.describe_topics([topic])[topic].partitions[0].leader not in (-1, old),
                "a leader other than the stopped node",
            )
        with Producer(cluster.bootstrap_servers) as producer:
            producer.send("after-failover", b"two").result(timeout=30)
            producer.send(topic, b"three").result(timeout=30)
    finally:
        cluster.node(old).start()
    with Admin(cluster.bootstrap_servers) as admin:
        wait_for_full_isr(admin, topic)
    values = [v for _, v in consume_all(cluster.bootstrap_servers, topic, 1)[0]]
    assert b"three" in values


def test_a_bad_zookeeper_keystore_is_a_one_line_error(tmp_path: Path, certs: Path) -> None:
    config = ZkClientConfig(
        ssl_client_enable=True,
        ssl_keystore_location=str(certs / "ca.crt"),  # a certificate, no key
        ssl_truststore_location=str(certs / "ca.crt"),
    )
    with pytest.raises(InvalidConfigError, match=r"zookeeper\.ssl\.keystore\.location"):
        new_zk_client("127.0.0.1:1", 5, config)
    missing = ZkClientConfig(
        ssl_client_enable=True, ssl_keystore_location=str(tmp_path / "absent.pem")
    )
    with pytest.raises(InvalidConfigError, match="no file"):
        new_zk_client("127.0.0.1:1", 5, missing)


def test_a_node_refuses_set_acl_without_a_zookeeper_identity(
    tmp_path: Path, tls_zookeeper: ZooKeeperServer
) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "odradek",
            "node",
            "start",
            "--node-id",
            "7",
            "--listen",
            "127.0.0.1:0",
            "--log-dirs",
            str(tmp_path / "n7"),
            "--zookeeper",
            tls_zookeeper.connect_string + "/refused",
        ],
        env={"ODRADEK_ZOOKEEPER_SET_ACL": "true", "PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        check=False,
    )
    assert result.returncode != 0
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert "zookeeper.set.acl is true" in lines[0]
