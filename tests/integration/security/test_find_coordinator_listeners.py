"""FindCoordinator answers with the coordinator's endpoint on the request's own listener
(issue 27, item 5), as Kafka does and as Metadata already did: on a node with SASL_SSL, SSL
and PLAINTEXT client listeners and a PLAINTEXT inter-broker one (in process, real ZooKeeper),
a consumer group works through each client listener. Before, every answer named the
inter-broker listener, so a client of any other listener could not reach its coordinator."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from deploy.local.zookeeper import ZooKeeperServer
from node.config import NodeConfig
from node.listeners import Listener
from node.security.tls import SslConfig
from node.server import Node
from odradek import Admin, Consumer, NewTopic, Producer, TopicPartition
from odradek.admin import ScramUpsertion
from odradek.client.connection import ConnectionPool
from odradek.client.security import SecurityConfig
from odradek.v1 import odradek_pb2 as pb
from tests.certs import CertificateAuthority
from tests.integration.helpers import wait_for

_chroots = itertools.count()

CLIENT_LISTENERS = ("PLAIN", "SSL", "SASL")


class Setup:
    def __init__(self, node: Node, cafile: str) -> None:
        self.node = node
        self.cafile = cafile

    def address(self, listener: str) -> str:
        return f"localhost:{self.node.ports[listener]}"

    def security(self, listener: str) -> dict[str, Any]:
        if listener == "SSL":
            return {"security_protocol": "SSL", "ssl_cafile": self.cafile}
        if listener == "SASL":
            return {
                "security_protocol": "SASL_SSL",
                "ssl_cafile": self.cafile,
                "sasl_mechanism": "SCRAM-SHA-256",
                "sasl_plain_username": "alice",
                "sasl_plain_password": "alice-secret",
            }
        return {}


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory, zookeeper: ZooKeeperServer) -> Iterator[Setup]:
    tmp_path: Path = tmp_path_factory.mktemp("find-coordinator")
    ca = CertificateAuthority("odradek-test-ca")
    _, _, keystore = ca.issue("CN=node-1", ["localhost", "127.0.0.1"]).write(tmp_path, "node-1")
    cafile = str(ca.write(tmp_path / "ca.crt"))
    names = (*CLIENT_LISTENERS, "INTERNAL")
    config = NodeConfig(
        node_id=1,
        log_dirs=(tmp_path / "data",),
        zookeeper_connect=f"{zookeeper.connect_string}/find_coordinator_{next(_chroots)}",
        listeners=tuple(Listener(n, "127.0.0.1", 0) for n in names),
        advertised_listeners=tuple(Listener(n, "localhost", 0) for n in names),
        listener_security_protocol_map=(
            ("PLAIN", "PLAINTEXT"),
            ("SSL", "SSL"),
            ("SASL", "SASL_SSL"),
            ("INTERNAL", "PLAINTEXT"),
        ),
        inter_broker_listener_name="INTERNAL",
        ssl=SslConfig(keystore_location=str(keystore), truststore_location=cafile),
        zookeeper_session_timeout_ms=6_000,
    )
    node = Node(config)
    try:
        node.start()
        s = Setup(node, cafile)
        with Admin(s.address("INTERNAL")) as admin:
            wait_for(lambda: admin.cluster_metadata().brokers, "a live broker")
            assert admin.create_topics([NewTopic("orders", 1, 1)]) == {"orders": None}
            wait_for(
                lambda: admin.describe_topics(["orders"])["orders"].partitions[0].leader >= 0,
                "a leader",
            )
            assert admin.alter_user_scram_credentials(
                [ScramUpsertion("alice", "SCRAM-SHA-256", "alice-secret", 8192)]
            ) == {"alice": None}
        with Producer(s.address("PLAIN"), acks=-1) as producer:
            producer.send("orders", b"first", partition=0).result(timeout=30)
        yield s
    finally:
        node.stop(controlled=False)


@pytest.mark.parametrize("listener", CLIENT_LISTENERS)
def test_find_coordinator_answers_on_the_requests_own_listener(setup: Setup, listener: str):
    pool = ConnectionPool(SecurityConfig(**setup.security(listener)))
    try:
        stub = pool.broker(setup.address(listener))

        def found() -> pb.Coordinator | None:
            request = pb.FindCoordinatorRequest(group_ids=[f"group-{listener}"])
            [c] = stub.FindCoordinator(request, timeout=30).coordinators
            return c if c.error_code == 0 else None

        coordinator = wait_for(found, f"a coordinator through {listener}")
        assert (coordinator.node_id, coordinator.host, coordinator.port) == (
            1,
            "localhost",
            setup.node.ports[listener],
        )
    finally:
        pool.close()


@pytest.mark.parametrize("listener", CLIENT_LISTENERS)
def test_a_consumer_group_commits_through_each_client_listener(setup: Setup, listener: str):
    security = setup.security(listener)
    group = f"readers-{listener}"
    with Consumer(
        setup.address(listener), group_id=group, auto_offset_reset="earliest", **security
    ) as consumer:
        consumer.subscribe(["orders"])
        records = wait_for(lambda: consumer.poll(timeout_ms=500), f"records through {listener}")
        assert records[0].value == b"first"
        consumer.commit()
        committed = consumer.committed([TopicPartition("orders", 0)])
    offset = committed[TopicPartition("orders", 0)]
    assert offset is not None and offset.offset >= 1
