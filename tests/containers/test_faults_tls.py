"""The fault suite's faults on a TLS cluster: mutual TLS between the nodes and for the clients,
ZooKeeper over TLS, znodes with secure ACLs (``ClusterTls`` in cluster.py; the settings of
deploy/compose/tls.yaml). The same workload and checks as test_faults.py, with nothing
acknowledged lost: what TLS adds to a fault is reconnecting (TLS handshakes between the nodes,
to ZooKeeper, from the clients), and a new controller rewriting znodes another node created
(which secure ACLs refuse unless every node has the same ZooKeeper identity).

Four scenarios keep the suite's time bounded (about a minute and a half together on two
cores): the leader SIGKILLed three times (replica fetchers, the controller's connections and the
clients reconnect over TLS), the controller SIGKILLed (another node takes over and rewrites the
znodes the first one wrote), the leader cut off by iptables until its ZooKeeper session expires
(it registers again over TLS under the same identity), and ZooKeeper restarted (every node's
session reconnects over TLS).
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError

from odradek import Admin, Consumer, NewTopic, TopicPartition
from tests.containers.checker import Verdict, check, replica_batches
from tests.containers.cluster import (
    CHROOT,
    SESSION_TIMEOUT_MS,
    ZOOKEEPER_HOST,
    ZOOKEEPER_PORT,
    ContainerCluster,
    Partition,
    now_s,
)
from tests.containers.workload import PARTITIONS, TOPIC, Workload
from tests.integration.helpers import wait_for

pytestmark = pytest.mark.containers


def wait_full_isr(cluster: ContainerCluster, timeout_s: float = 90.0) -> None:
    """Every partition led with all three replicas in its ISR (ZooKeeper's word), every node
    registered and serving (over TLS)."""

    def full() -> bool:
        states = cluster.partition_states(TOPIC, PARTITIONS)
        return (
            all(leader > 0 and isr == set(cluster.nodes) for leader, isr in states.values())
            and cluster.registered_nodes() == set(cluster.nodes)
            and all(node.serving() for node in cluster.nodes.values())
        )

    wait_for(full, "every partition to have a leader and 3 in-sync replicas", timeout_s)


def wait_progress(workload: Workload, count: int, timeout_s: float = 60.0) -> None:
    target = workload.acked() + count
    wait_for(lambda: workload.acked() >= target, f"{count} more acknowledged sends", timeout_s)


def final_log(cluster: ContainerCluster) -> dict[int, list[tuple[int, bytes]]]:
    out: dict[int, list[tuple[int, bytes]]] = {p: [] for p in range(PARTITIONS)}
    tps = [TopicPartition(TOPIC, p) for p in range(PARTITIONS)]
    with Consumer(
        cluster.bootstrap_servers, auto_offset_reset="earliest", **cluster.client_config
    ) as consumer:
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        ends = consumer.end_offsets(tps)
        deadline = now_s() + 60
        while any(consumer.position(tp) < ends[tp] for tp in tps):
            assert now_s() < deadline, "reading the final log took more than 60 s"
            for record in consumer.poll(timeout_ms=500):
                out[record.partition].append((record.offset, record.value or b""))
    return out


def assert_tls_only(cluster: ContainerCluster) -> None:
    """The cluster really is on TLS: a plaintext client gets no answer from a node, and a
    ZooKeeper client without the nodes' certificate cannot change their znodes."""
    node = next(iter(cluster.nodes.values()))
    with grpc.insecure_channel(node.address) as channel, pytest.raises(grpc.RpcError):
        health_pb2_grpc.HealthStub(channel).Check(
            health_pb2.HealthCheckRequest(service=""), timeout=3
        )
    outsider = KazooClient(hosts=f"{ZOOKEEPER_HOST}:{ZOOKEEPER_PORT}{CHROOT}", timeout=5)
    outsider.start(timeout=10)
    try:
        acls, _ = outsider.get_acls(f"/brokers/topics/{TOPIC}")
        assert any(acl.id.scheme == "x509" for acl in acls), acls
        with pytest.raises(NoAuthError):
            outsider.set(f"/brokers/topics/{TOPIC}", b"{}")
    finally:
        outsider.stop()
        outsider.close()


def run_tls_scenario(
    name: str,
    cluster: ContainerCluster,
    fault: Callable[[ContainerCluster, Workload], None],
    verdicts: list[Verdict],
) -> None:
    """test_faults.py's scenario on a TLS cluster: workload, ``fault``, healing, checks."""
    with Admin(
        cluster.bootstrap_servers, request_timeout_ms=10_000, **cluster.client_config
    ) as admin:
        created = admin.create_topics(
            [NewTopic(TOPIC, PARTITIONS, 3, configs={"min.insync.replicas": "2"})]
        )
    assert created == {TOPIC: None}
    wait_full_isr(cluster)
    assert_tls_only(cluster)
    workload = Workload(cluster.bootstrap_servers, client_config=cluster.client_config)
    workload.start()
    try:
        wait_progress(workload, 100)
        fault(cluster, workload)
        wait_full_isr(cluster)
        wait_progress(workload, 100)
    finally:
        history = workload.stop()
    final = final_log(cluster)
    cluster.stop_nodes()
    replicas = {}
    for node_id, node in cluster.nodes.items():
        copy = cluster.directory / "read" / f"node-{node_id}"
        shutil.copytree(node.data_dir, copy)
        replicas[node_id] = {p: replica_batches(copy, TOPIC, p) for p in range(PARTITIONS)}
    verdict = check(name, history, final, replicas)
    verdicts.append(verdict)
    print(
        f"\n{name}: {verdict.operations} operations, {verdict.acknowledged} acknowledged, "
        f"{verdict.failed} failed, {len(verdict.lost)} lost, {verdict.duplicated} duplicated, "
        f"{verdict.reads} reads, longest unavailability {verdict.unavailable_s:.1f} s"
    )
    assert verdict.violations == {}, verdict.violations


def leader_of_partition_0(cluster: ContainerCluster) -> int:
    def leader() -> int | None:
        found, _ = cluster.partition_states(TOPIC, PARTITIONS)[0]
        return found if found > 0 else None

    return wait_for(leader, "partition 0 to have a leader", 60)


def wait_leader_moves(cluster: ContainerCluster, old: int) -> int:
    def moved() -> int | None:
        found, _ = cluster.partition_states(TOPIC, PARTITIONS)[0]
        return found if found not in (-1, old) else None

    return wait_for(moved, f"partition 0's leadership to move off node {old}", 60)


def test_tls_leader_killed_repeatedly(tls_cluster: ContainerCluster, verdicts: list[Verdict]):
    """SIGKILL of partition 0's leader, three times, each restarted once another has taken
    over: followers, the controller and clients reconnect over TLS."""

    def fault(cluster: ContainerCluster, workload: Workload) -> None:
        for _ in range(3):
            wait_full_isr(cluster)
            old = leader_of_partition_0(cluster)
            workload.fault()
            cluster.kill(old)
            wait_leader_moves(cluster, old)
            wait_progress(workload, 20)
            workload.healed()
            cluster.start_node(old)

    run_tls_scenario("TLS: kill leader (3x)", tls_cluster, fault, verdicts)


def test_tls_controller_killed(tls_cluster: ContainerCluster, verdicts: list[Verdict]):
    """SIGKILL of the active controller: another node takes over, and with secure ACLs it may
    only rewrite the partition states the first controller wrote because both present the same
    ZooKeeper identity."""

    def fault(cluster: ContainerCluster, workload: Workload) -> None:
        controller = wait_for(
            lambda: (c := cluster.controller_id()) > 0 and c, "an active controller"
        )
        leader = leader_of_partition_0(cluster)
        workload.fault()
        cluster.kill(controller)
        wait_for(
            lambda: cluster.controller_id() not in (-1, controller),
            "another node to become the controller",
        )
        if leader == controller:
            wait_leader_moves(cluster, leader)
        wait_progress(workload, 20)
        workload.healed()
        cluster.start_node(controller)

    run_tls_scenario("TLS: kill controller", tls_cluster, fault, verdicts)


def test_tls_leader_partitioned(
    tls_cluster: ContainerCluster, verdicts: list[Verdict], partition: Partition
):
    """Partition 0's leader cut off from everyone with iptables until its ZooKeeper session
    expires and leadership moves; healed, it opens a new session over TLS and registers
    again."""

    def fault(cluster: ContainerCluster, workload: Workload) -> None:
        leader = leader_of_partition_0(cluster)
        workload.fault()
        partition.isolate(cluster.nodes[leader])
        try:
            wait_for(
                lambda: leader not in cluster.registered_nodes(),
                f"node {leader}'s ZooKeeper session to expire",
                SESSION_TIMEOUT_MS / 1000 + 30,
            )
            wait_leader_moves(cluster, leader)
            wait_progress(workload, 20)
        finally:
            partition.heal()
        workload.healed()

    run_tls_scenario("TLS: partition leader", tls_cluster, fault, verdicts)


def test_tls_zookeeper_restarted(tls_cluster: ContainerCluster, verdicts: list[Verdict]):
    """ZooKeeper stopped and started again (its data kept): the nodes' sessions reconnect over
    TLS and the nodes, under their shared identity, rewrite their registrations."""

    def fault(cluster: ContainerCluster, workload: Workload) -> None:
        workload.fault()
        cluster.stop_zookeeper()
        time.sleep(3)  # the fault's duration, not a sync
        cluster.start_zookeeper()
        wait_for(
            lambda: cluster.registered_nodes() == set(cluster.nodes),
            "every node to be registered",
        )
        workload.healed()

    run_tls_scenario("TLS: restart zookeeper", tls_cluster, fault, verdicts)
