"""Replication against real node processes and a real ZooKeeper, on loopback.

Each test starts its own three-node cluster (on the session's ZooKeeper, under a chroot of its
own) with a short ZooKeeper session (6 s) so failures are noticed quickly.
"""

from __future__ import annotations

import signal
import threading
import time

import grpc
import pytest

from odradek import Admin, NewTopic, Producer
from odradek.client.futures import FutureRecordMetadata
from odradek.client.metadata import PartitionMetadata
from odradek.errors import NotEnoughReplicasError
from odradek.records import Record, build_batch
from odradek.v1 import odradek_pb2 as pb
from odradek.v1 import odradek_pb2_grpc as pb_grpc
from tests.integration.helpers import (
    consume_all,
    partition_state,
    replica_log,
    wait_for,
    wait_for_full_isr,
)


def _create(admin: Admin, topic: str, partitions: int = 1, rf: int = 3, **configs: str) -> None:
    result = admin.create_topics(
        [
            NewTopic(
                topic,
                num_partitions=partitions,
                replication_factor=rf,
                configs={"min.insync.replicas": "2", **configs},
            )
        ]
    )
    assert result == {topic: None}
    wait_for_full_isr(admin, topic, partitions, rf)


def _raw_produce(
    address: str, topic: str, values: list[bytes], acks: int
) -> pb.ProducePartitionResponse:
    stub = pb_grpc.BrokerStub(grpc.insecure_channel(address))
    response = stub.Produce(
        pb.ProduceRequest(
            acks=acks,
            timeout_ms=10_000,
            partitions=[
                pb.ProducePartitionData(
                    topic=topic,
                    partition=0,
                    records=build_batch([Record(None, v) for v in values]),
                )
            ],
        ),
        timeout=30,
    )
    return response.partitions[0]


def test_replicated_produce_and_consume_with_identical_replicas(make_cluster):
    cluster = make_cluster()
    admin = Admin(cluster.bootstrap_servers)
    _create(admin, "events", partitions=3)
    with Producer(cluster.bootstrap_servers, acks=-1, linger_ms=2) as producer:
        futures = [
            producer.send("events", f"value-{i}".encode(), key=f"key-{i % 17}".encode())
            for i in range(600)
        ]
        producer.flush(60)
    acked = [f.result(timeout=0) for f in futures]
    consumed = consume_all(cluster.bootstrap_servers, "events", 3)
    by_partition: dict[int, list[tuple[int, bytes]]] = {0: [], 1: [], 2: []}
    for i, meta in enumerate(acked):
        by_partition[meta.partition].append((meta.offset, f"value-{i}".encode()))
    for p in range(3):
        assert consumed[p] == sorted(by_partition[p])
    # the same key always lands in the same partition
    assert len({acked[i].partition for i in range(0, 600, 17)}) == 1
    admin.close()
    cluster.stop()
    for p in range(3):
        logs = [replica_log(cluster, n, "events", p) for n in range(3)]
        assert logs[0] == logs[1] == logs[2]
        assert sum(last - base + 1 for base, last, _, _ in logs[0]) == len(by_partition[p])


def test_not_enough_replicas_when_the_isr_is_below_the_minimum(make_cluster):
    cluster = make_cluster()
    admin = Admin(cluster.bootstrap_servers)
    _create(admin, "strict")
    leader = partition_state(admin, "strict").leader
    followers = [n for n in range(3) if n != leader]
    for n in followers:
        cluster.node(n).kill()
    wait_for(lambda: partition_state(admin, "strict").isr == (leader,), "the ISR to shrink")
    address = cluster.node(leader).address
    r = _raw_produce(address, "strict", [b"x"], acks=-1)
    assert (r.error_code, r.base_offset) == (NotEnoughReplicasError.code, -1)
    # acks=1 is still accepted, and nothing of the refused request was written
    r = _raw_produce(address, "strict", [b"y"], acks=1)
    assert (r.error_code, r.base_offset) == (0, 0)
    # with a follower back, acks=-1 works again
    cluster.node(followers[0]).start()
    wait_for(lambda: len(partition_state(admin, "strict").isr) == 2, "a follower to rejoin")
    r = _raw_produce(address, "strict", [b"z"], acks=-1)
    assert (r.error_code, r.base_offset) == (0, 1)
    admin.close()


def test_a_divergent_follower_tail_is_truncated_after_a_leader_change(make_cluster):
    # Kafka's ISR rules only: the followers must stay in the ISR while frozen (1.5 s, longer
    # than replica.fetch.silence.max.ms and broker.session.timeout.ms), so that one of them
    # can be elected cleanly.
    cluster = make_cluster(replica_fetch_silence_max_ms="0", broker_session_timeout_ms="0")
    admin = Admin(cluster.bootstrap_servers)
    _create(admin, "diverge", 1, 3, **{"min.insync.replicas": "1"})
    old_leader = partition_state(admin, "diverge").leader
    address = cluster.node(old_leader).address
    assert _raw_produce(address, "diverge", [b"a0", b"a1"], acks=-1).error_code == 0
    followers = [n for n in range(3) if n != old_leader]
    # followers frozen: the leader alone gets an acks=1 tail, then dies with it on disk
    for n in followers:
        cluster.node(n).signal(signal.SIGSTOP)
    try:
        # let the fetches they had parked at the leader (500 ms long polls) come back empty
        time.sleep(1.5)
        r = _raw_produce(address, "diverge", [b"lost0", b"lost1", b"lost2"], acks=1)
        assert (r.error_code, r.base_offset) == (0, 2)
        cluster.node(old_leader).kill()
    finally:
        for n in followers:
            cluster.node(n).signal(signal.SIGCONT)

    def new_leader() -> PartitionMetadata | None:
        s = partition_state(admin, "diverge")
        return s if s.leader in followers else None

    state = wait_for(new_leader, "a new leader")
    new_address = cluster.node(state.leader).address

    def write() -> pb.ProducePartitionResponse | None:
        x = _raw_produce(new_address, "diverge", [b"b2", b"b3"], acks=-1)
        return x if x.error_code == 0 else None

    r = wait_for(
        write,
        "a write to the new leader",
    )
    assert r.base_offset == 2  # the old leader's tail was never committed
    cluster.node(old_leader).start()
    wait_for(lambda: len(partition_state(admin, "diverge").isr) == 3, "the old leader to rejoin")
    consumed = consume_all(cluster.bootstrap_servers, "diverge", 1)[0]
    assert [v for _, v in consumed] == [b"a0", b"a1", b"b2", b"b3"]
    admin.close()
    cluster.stop()
    logs = [replica_log(cluster, n, "diverge", 0) for n in range(3)]
    assert logs[0] == logs[1] == logs[2]  # the old leader cut its divergent tail


def test_controller_failover(make_cluster):
    cluster = make_cluster()
    admin = Admin(cluster.bootstrap_servers)
    first = admin.describe_cluster().controller_id
    assert first in (0, 1, 2)
    cluster.node(first).kill()
    second = wait_for(
        lambda: (c := admin.describe_cluster().controller_id) not in (-1, first) and c,
        "another controller",
    )
    assert second != first
    _create(admin, "after-failover", rf=2)  # the new controller creates topics, elects leaders
    cluster.node(first).start()
    wait_for(lambda: len(admin.describe_cluster().brokers) == 3, "the old controller to return")
    assert admin.describe_cluster().controller_id == second
    admin.close()


def test_controlled_shutdown_fails_no_acks_all_produce(make_cluster):
    cluster = make_cluster()
    admin = Admin(cluster.bootstrap_servers)
    _create(admin, "steady")
    leader = partition_state(admin, "steady").leader
    stop = threading.Event()
    futures: list[FutureRecordMetadata] = []

    def produce() -> None:
        # Kafka's default producer: retriable errors (NOT_LEADER_OR_FOLLOWER while leadership
        # moves) are retried; a controlled shutdown must leave nothing failed or lost
        with Producer(cluster.bootstrap_servers, acks=-1, linger_ms=1) as producer:
            i = 0
            while not stop.is_set():
                futures.append(producer.send("steady", f"v{i}".encode()))
                i += 1
                time.sleep(0.002)
            producer.flush(60)

    writer = threading.Thread(target=produce)
    writer.start()
    try:
        time.sleep(1)
        assert cluster.node(leader).stop() == 0  # SIGTERM: a controlled shutdown
        wait_for(lambda: partition_state(admin, "steady").leader not in (-1, leader), "new leader")
        time.sleep(1)
    finally:
        stop.set()
        writer.join(timeout=120)
    failed = [f.exception() for f in futures if f.exception() is not None]
    if failed:  # not `assert failed == []`: its diff lists every failure, burying the logs
        pytest.fail(f"{len(failed)} of {len(futures)} sends failed, first: {failed[:1]}")
    consumed = dict(consume_all(cluster.bootstrap_servers, "steady", 1)[0])
    # every acknowledged record is at its offset, and (the producer is idempotent by default)
    # nothing else is there: a batch retried after an answer lost in the move is stored once
    lost = [i for i, f in enumerate(futures) if consumed.get(f.result().offset) != f"v{i}".encode()]
    assert lost == []
    assert len(consumed) == len(futures)
    admin.close()


@pytest.mark.parametrize("rounds", [5])
def test_leader_hard_killed_and_restarted_while_producing_loses_no_ack(make_cluster, rounds):
    """Kafka's replication test (replication_test.py, hard_bounce of the leader)."""
    cluster = make_cluster()
    admin = Admin(cluster.bootstrap_servers)
    _create(admin, "bounce", partitions=2)
    stop = threading.Event()
    acked: list[tuple[int, int, bytes]] = []
    lock = threading.Lock()

    def produce(worker: int) -> None:
        with Producer(cluster.bootstrap_servers, acks=-1, linger_ms=2) as producer:
            i = 0
            while not stop.is_set():
                value = f"w{worker}-{i}".encode()

                def done(f: FutureRecordMetadata, value: bytes = value) -> None:
                    if f.exception() is None:
                        meta = f.result()
                        with lock:
                            acked.append((meta.partition, meta.offset, value))

                producer.send("bounce", value).add_done_callback(done)
                i += 1
                time.sleep(0.005)
            producer.flush(120)

    writers = [threading.Thread(target=produce, args=(w,)) for w in range(2)]
    for w in writers:
        w.start()
    try:
        for _ in range(rounds):
            wait_for_full_isr(admin, "bounce", 2)
            leader = partition_state(admin, "bounce", 0).leader
            cluster.node(leader).kill()
            old = leader
            wait_for(
                lambda: partition_state(admin, "bounce", 0).leader not in (-1, old),  # noqa: B023
                "a new leader",
            )
            time.sleep(0.5)
            cluster.node(leader).start()
    finally:
        stop.set()
        for w in writers:
            w.join(timeout=180)
    wait_for_full_isr(admin, "bounce", 2)
    consumed = consume_all(cluster.bootstrap_servers, "bounce", 2)
    assert len(acked) > 100
    duplicates = 0
    for p in range(2):
        log = dict(consumed[p])
        offsets = [o for o, _ in consumed[p]]
        assert offsets == sorted(set(offsets)), "offsets must be unique and increasing"
        mine = [(o, v) for part, o, v in acked if part == p]
        lost = [(o, v) for o, v in mine if log.get(o) != v]
        assert lost == [], f"partition {p}: {len(lost)} acknowledged records lost: {lost[:5]}"
        # per producer, acknowledged records appear in the order they were sent
        for worker in range(2):
            prefix = f"w{worker}-".encode()
            seq = [int(v[len(prefix) :]) for _, v in consumed[p] if v.startswith(prefix)]
            acked_seq = {
                int(v[len(prefix) :]) for pp, _, v in acked if pp == p and v.startswith(prefix)
            }
            in_log = [s for s in seq if s in acked_seq]
            assert in_log == sorted(in_log), f"partition {p}, producer {worker}: out of order"
            duplicates += len(seq) - len(set(seq))
    # the producers are idempotent (the default): a retry after a lost answer is stored once
    assert duplicates == 0, f"{duplicates} records stored twice after {rounds} leader kills"
    print(f"{len(acked)} acknowledged, 0 lost, 0 duplicates after {rounds} leader kills")
    admin.close()
