"""Broker liveness by heartbeats to the controller, against real node processes.

The clusters here keep a long ZooKeeper session (30 s), so that whatever happens within it is
the heartbeats' doing: a leader that stops heartbeating is fenced and replaced while its
ZooKeeper registration still stands, and a paused leader that comes back after its successor
was elected acknowledges nothing its successor does not hold.
"""

from __future__ import annotations

import signal
import threading

import grpc
from kazoo.client import KazooClient

from deploy.local.cluster import LocalCluster
from odradek import Admin, NewTopic, Producer
from odradek.records import Record, build_batch
from odradek.v1 import odradek_pb2 as pb
from odradek.v1 import odradek_pb2_grpc as pb_grpc
from tests.integration.helpers import consume_all, partition_state, wait_for, wait_for_full_isr

LONG_ZOOKEEPER_SESSION = {"zookeeper_session_timeout_ms": "30000"}


def _topic_led_away_from_the_controller(admin: Admin, topic: str) -> tuple[int, int]:
    """Create ``topic`` (one partition, replication 3, min.insync.replicas 2) led by a node
    that is not the controller; returns (leader, controller)."""
    controller = admin.describe_cluster().controller_id
    order = sorted(range(3), key=lambda n: n == controller)  # the controller last
    result = admin.create_topics(
        [NewTopic(topic, assignments={0: order}, configs={"min.insync.replicas": "2"})]
    )
    assert result == {topic: None}
    wait_for_full_isr(admin, topic)
    leader = partition_state(admin, topic).leader
    assert leader == order[0] != controller
    return leader, controller


def _registered(cluster: LocalCluster, node_id: int) -> bool:
    zk = KazooClient(hosts=cluster.zookeeper.connect_string + cluster.chroot)
    zk.start(timeout=10)
    try:
        return zk.exists(f"/brokers/ids/{node_id}") is not None
    finally:
        zk.stop()
        zk.close()


def test_a_killed_leader_is_replaced_while_its_zookeeper_registration_stands(make_cluster):
    cluster = make_cluster(**LONG_ZOOKEEPER_SESSION)
    admin = Admin(cluster.bootstrap_servers)
    leader, _ = _topic_led_away_from_the_controller(admin, "killed")
    with Producer(cluster.bootstrap_servers) as producer:
        producer.send("killed", b"before", partition=0).result(30)
        cluster.node(leader).kill()
        wait_for(
            lambda: partition_state(admin, "killed").leader not in (-1, leader), "a new leader"
        )
        state = partition_state(admin, "killed")
        # fenced by its missed heartbeats, not by the end of its ZooKeeper session (30 s)
        assert _registered(cluster, leader)
        assert leader not in state.isr
        producer.send("killed", b"after", partition=0).result(30)
    assert [v for _, v in consume_all(cluster.bootstrap_servers, "killed", 1)[0]] == [
        b"before",
        b"after",
    ]
    admin.close()


def _produce(stub: pb_grpc.BrokerStub, value: bytes, acks: int) -> pb.ProducePartitionResponse:
    response = stub.Produce(
        pb.ProduceRequest(
            acks=acks,
            timeout_ms=10_000,
            partitions=[
                pb.ProducePartitionData(
                    topic="paused", partition=0, records=build_batch([Record(None, value)])
                )
            ],
        ),
        timeout=60,
    )
    return response.partitions[0]


def test_a_paused_leader_back_after_its_successor_acknowledges_nothing_it_gives_back(
    make_cluster,
):
    cluster = make_cluster(**LONG_ZOOKEEPER_SESSION)
    admin = Admin(cluster.bootstrap_servers)
    leader, _ = _topic_led_away_from_the_controller(admin, "paused")
    old = cluster.node(leader)
    stub = pb_grpc.BrokerStub(grpc.insecure_channel(old.address))
    assert _produce(stub, b"before", acks=-1).error_code == 0
    old.signal(signal.SIGSTOP)
    try:
        wait_for(
            lambda: partition_state(admin, "paused").leader not in (-1, leader),
            "a successor to the paused leader",
        )
        with Producer(cluster.bootstrap_servers) as producer:
            producer.send("paused", b"successor", partition=0).result(30)
        # writes that reach the paused leader wait in its sockets until it runs again
        answers: dict[bytes, pb.ProducePartitionResponse] = {}
        sending = threading.Semaphore(0)

        def send(value: bytes, acks: int) -> None:
            sending.release()
            answers[value] = _produce(stub, value, acks)

        senders = [
            threading.Thread(target=send, args=(f"stale-acks{acks}-{i}".encode(), acks))
            for acks in (1, -1)
            for i in range(3)
        ]
        for t in senders:
            t.start()
        for _ in senders:
            assert sending.acquire(timeout=30)
    finally:
        old.signal(signal.SIGCONT)
    for t in senders:
        t.join(90)
    assert len(answers) == 6
    # it comes back as a follower of its successor
    wait_for_full_isr(admin, "paused")
    stored = [v for _, v in consume_all(cluster.bootstrap_servers, "paused", 1)[0]]
    acknowledged = [value for value, r in answers.items() if r.error_code == 0]
    assert [v for v in acknowledged if v not in stored] == []
    assert stored[:2] == [b"before", b"successor"]
    assert len(stored) == len(set(stored))
    admin.close()
