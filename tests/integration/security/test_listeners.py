"""A node with two named listeners: a client one and an inter-broker one (in-process node,
real ZooKeeper)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from kazoo.client import KazooClient

from node.config import NodeConfig
from node.listeners import Listener
from node.server import Node
from odradek import Admin, Consumer, NewTopic, Producer, TopicPartition
from odradek.client.errors import error_from_rpc
from odradek.errors import ClusterAuthorizationFailedError
from odradek.v1 import odradek_pb2 as pb
from odradek.v1 import odradek_pb2_grpc as pb_grpc
from tests.integration.helpers import wait_for


@pytest.fixture
def node(tmp_path: Path, zk_connect: str) -> Iterator[Node]:
    config = NodeConfig(
        node_id=1,
        log_dirs=(tmp_path / "data",),
        zookeeper_connect=zk_connect,
        listeners=(Listener("CLIENT", "127.0.0.1", 0), Listener("REPLICATION", "127.0.0.1", 0)),
        # clients are told "localhost"; the other nodes the bound address
        advertised_listeners=(Listener("CLIENT", "localhost", 0),),
        listener_security_protocol_map=(("CLIENT", "PLAINTEXT"), ("REPLICATION", "PLAINTEXT")),
        inter_broker_listener_name="REPLICATION",
        zookeeper_session_timeout_ms=6_000,
    )
    n = Node(config)
    try:
        n.start()
        yield n
    finally:
        n.stop(controlled=False)


def _metadata(address: str) -> pb.MetadataResponse:
    with grpc.insecure_channel(address) as channel:
        answer: pb.MetadataResponse = pb_grpc.BrokerStub(channel).Metadata(
            pb.MetadataRequest(all_topics=True), timeout=10
        )
        return answer


def test_each_listener_advertises_its_own_address(node: Node, zk_connect: str) -> None:
    client, replication = node.ports["CLIENT"], node.ports["REPLICATION"]
    assert node.port == client and client != replication
    zk = KazooClient(hosts=zk_connect, timeout=10)
    zk.start(timeout=15)
    try:
        data, _ = zk.get("/brokers/ids/1")
    finally:
        zk.stop()
        zk.close()
    registration = json.loads(data)
    assert registration["endpoints"] == [
        f"CLIENT://localhost:{client}",
        f"REPLICATION://127.0.0.1:{replication}",
    ]
    assert registration["listener_security_protocol_map"] == {
        "CLIENT": "PLAINTEXT",
        "REPLICATION": "PLAINTEXT",
    }

    # Metadata gives the endpoints of the listener the request came in on
    on_client = wait_for(lambda: _metadata(f"127.0.0.1:{client}").brokers, "a live broker")
    assert [(b.node_id, b.host, b.port) for b in on_client] == [(1, "localhost", client)]
    assert not on_client[0].endpoints  # a client does not learn the other listeners
    on_replication = _metadata(f"127.0.0.1:{replication}").brokers
    assert [(b.host, b.port) for b in on_replication] == [("127.0.0.1", replication)]

    # the SDK, bootstrapped on the client listener, reaches the node at its advertised name
    bootstrap = f"localhost:{client}"
    with Admin(bootstrap) as admin:
        assert admin.create_topics([NewTopic("orders", 1, 1)]) == {"orders": None}
    with Producer(bootstrap) as producer:
        producer.send("orders", b"one").result(timeout=30)
    with Consumer(bootstrap, auto_offset_reset="earliest") as consumer:
        consumer.assign([TopicPartition("orders", 0)])
        records = wait_for(lambda: consumer.poll(timeout_ms=500), "the record")
        assert [r.value for r in records] == [b"one"]


def test_replication_requests_only_on_the_inter_broker_listener(node: Node) -> None:
    client = f"127.0.0.1:{node.ports['CLIENT']}"
    with grpc.insecure_channel(client) as channel:
        with pytest.raises(grpc.RpcError) as refused:
            pb_grpc.ReplicationStub(channel).LeaderAndIsr(
                pb.LeaderAndIsrRequest(controller_id=1, controller_epoch=99), timeout=10
            )
        assert refused.value.code() is grpc.StatusCode.PERMISSION_DENIED
        error = error_from_rpc(refused.value, client)
        assert isinstance(error, ClusterAuthorizationFailedError)
        assert "only on listener REPLICATION" in str(error)
        with pytest.raises(grpc.RpcError) as refused:
            list(
                pb_grpc.ReplicationStub(channel).FetchSession(
                    iter([pb.FetchRequest(replica_id=2)]), timeout=10
                )
            )
        assert refused.value.code() is grpc.StatusCode.PERMISSION_DENIED
        with pytest.raises(grpc.RpcError) as refused:
            pb_grpc.ControllerStub(channel).ControlledShutdown(
                pb.ControlledShutdownRequest(broker_id=1, broker_epoch=1), timeout=10
            )
        assert refused.value.code() is grpc.StatusCode.PERMISSION_DENIED
    # the inter-broker listener answers (here: the request's own errors, not a refusal)
    with grpc.insecure_channel(f"127.0.0.1:{node.ports['REPLICATION']}") as channel:
        answer = pb_grpc.ReplicationStub(channel).UpdateMetadata(
            pb.UpdateMetadataRequest(controller_id=1, controller_epoch=0), timeout=10
        )
        assert isinstance(answer, pb.UpdateMetadataResponse)
