"""The idempotent producer's broker side against real node processes and a real ZooKeeper:
producer ids unique across nodes and restarts, and a produce retried after the leader was
killed (its answer lost) stored exactly once. Batches are built with odradek.records and sent
with the Produce RPC directly."""

from __future__ import annotations

import threading

import grpc

from deploy.local.cluster import LocalCluster
from odradek import Admin, NewTopic
from odradek.client.producer_id import init_producer_id
from odradek.errors import OutOfOrderSequenceError
from odradek.records import Record, build_batch
from odradek.v1 import odradek_pb2 as pb
from odradek.v1 import odradek_pb2_grpc as pb_grpc
from tests.integration.helpers import partition_state, replica_log, wait_for, wait_for_full_isr

TOPIC = "idem"


def _ids(address: str, count: int) -> list[int]:
    """``count`` producer ids from the node at ``address`` (retrying retriable errors)."""
    channel = grpc.insecure_channel(address)
    try:

        def one() -> tuple[int]:
            return (init_producer_id(channel, address=address, timeout_ms=10_000).producer_id,)

        return [wait_for(one, "a producer id")[0] for _ in range(count)]
    finally:
        channel.close()


def test_two_nodes_never_hand_out_the_same_producer_id(make_cluster):
    cluster = make_cluster(2)
    seen: list[int] = []
    for node in (0, 1, 0, 1):
        seen += _ids(cluster.node(node).address, 5)
    cluster.node(0).kill()
    cluster.node(0).start()
    seen += _ids(cluster.node(0).address, 5)
    cluster.node(1).stop()
    cluster.node(1).start()
    seen += _ids(cluster.node(1).address, 5)
    assert len(seen) == len(set(seen)) == 30
    # each node claimed blocks of 1000: a restarted node starts a new block
    assert seen[:5] == [0, 1, 2, 3, 4] or seen[:5] == [1000, 1001, 1002, 1003, 1004]
    assert min(seen[20:25]) >= 2000 and min(seen[25:]) >= 2000


def _batch(pid: int, seq: int, values: list[bytes]) -> bytes:
    return build_batch(
        [Record(None, v) for v in values], producer_id=pid, producer_epoch=0, base_sequence=seq
    )


def _produce(address: str, records: bytes, timeout_s: float = 30) -> pb.ProducePartitionResponse:
    channel = grpc.insecure_channel(address)
    try:
        response = pb_grpc.BrokerStub(channel).Produce(
            pb.ProduceRequest(
                acks=-1,
                timeout_ms=10_000,
                partitions=[pb.ProducePartitionData(topic=TOPIC, partition=0, records=records)],
            ),
            timeout=timeout_s,
        )
        return response.partitions[0]
    finally:
        channel.close()


def _leader_address(admin: Admin, cluster: LocalCluster, exclude: int = -1) -> tuple[int, str]:
    def leader() -> int | None:
        found = partition_state(admin, TOPIC).leader
        return found + 1 if found not in (-1, exclude) else None  # node 0 is falsy

    node = wait_for(leader, "a leader") - 1
    return node, cluster.node(node).address


def _send_until_answered(
    admin: Admin, cluster, records: bytes, dead: int
) -> pb.ProducePartitionResponse:
    """Send to whoever leads (not ``dead``) until a node answers without a retriable error."""

    def attempt() -> pb.ProducePartitionResponse | None:
        _, address = _leader_address(admin, cluster, dead)
        r = _produce(address, records)
        return r if r.error_code in (0, OutOfOrderSequenceError.code) else None

    return wait_for(attempt, "an answer from the new leader")


def test_produce_retried_after_the_leader_is_killed_is_stored_once(make_cluster):
    cluster = make_cluster()
    admin = Admin(cluster.bootstrap_servers)
    created = admin.create_topics([NewTopic(TOPIC, 1, 3, configs={"min.insync.replicas": "2"})])
    assert created == {TOPIC: None}
    wait_for_full_isr(admin, TOPIC)
    pid = _ids(cluster.bootstrap_servers.split(",")[0], 1)[0]
    leader, address = _leader_address(admin, cluster)
    values = [[f"b{i}-r{j}".encode() for j in range(3)] for i in range(6)]
    seqs = [3 * i for i in range(6)]
    for i in range(3):
        r = _produce(address, _batch(pid, seqs[i], values[i]))
        assert (r.error_code, r.base_offset) == (0, 3 * i)

    # 1. batch 3 is committed but its answer "lost": the leader dies, the client sends again
    r = _produce(address, _batch(pid, seqs[3], values[3]))
    assert (r.error_code, r.base_offset) == (0, 9)
    cluster.node(leader).kill()
    again = _send_until_answered(admin, cluster, _batch(pid, seqs[3], values[3]), leader)
    assert (again.error_code, again.base_offset) == (0, 9)  # the original offset, no error
    cluster.node(leader).start()
    wait_for_full_isr(admin, TOPIC)

    # 2. batch 4 races the leader's death: its answer may or may not come, then it is resent
    leader, address = _leader_address(admin, cluster)
    answers: list[pb.ProducePartitionResponse | Exception] = []

    def send() -> None:
        try:
            answers.append(_produce(address, _batch(pid, seqs[4], values[4]), timeout_s=10))
        except grpc.RpcError as e:
            answers.append(e)

    sender = threading.Thread(target=send)
    sender.start()
    cluster.node(leader).kill()
    sender.join(timeout=60)
    again = _send_until_answered(admin, cluster, _batch(pid, seqs[4], values[4]), leader)
    assert (again.error_code, again.base_offset) == (0, 12)
    _, address = _leader_address(admin, cluster, leader)
    r = _produce(address, _batch(pid, seqs[5], values[5]))
    assert (r.error_code, r.base_offset) == (0, 15)
    cluster.node(leader).start()
    wait_for_full_isr(admin, TOPIC)
    admin.close()
    cluster.stop()

    logs = [replica_log(cluster, n, TOPIC, 0) for n in range(3)]
    assert logs[0] == logs[1] == logs[2]
    assert [(base, last) for base, last, _, _ in logs[0]] == [(3 * i, 3 * i + 2) for i in range(6)]
