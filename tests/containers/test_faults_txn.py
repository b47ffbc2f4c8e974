"""Exactly-once read-process-write under faults: issue 32's fault proof.

One scenario on one fresh cluster (the suite's time budget): the transactional workload
(``txn_workload.py``: a feeder, three confluent-kafka processors in one group, each input
processed in a transaction that also commits the group's offsets, a live read_committed reader)
runs through four faults in turn, each healed (the node restarted or resumed, every partition of
the two topics back to three in-sync replicas) before the next:

1. the leader of the output topic's partition 0 SIGKILLed (markers and transactional appends
   move to a new leader);
2. the coordinator SIGKILLed: the leader of processor 0's ``__transaction_state`` partition
   (another node takes the partition over and finishes the transactions it finds prepared);
3. the active controller SIGKILLed;
4. the group's coordinator (leader of its ``__consumer_offsets`` partition, where the
   transactional offsets are pending until their markers) frozen with ``docker pause`` until its
   ZooKeeper session expires and its partitions move, then resumed (the loop's progress is
   awaited after the resume: see ``pause_group_coordinator``).

Then the feeder stops, the processors drain the input and stop, and ``txn_checker.py`` judges:
every input exactly once in the read_committed output and nothing else, no aborted record
returned to a read_committed reader, the group's offsets matching the outputs, no transaction
left open and every output partition's last stable offset at its high watermark.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import confluent_kafka
import pytest

from node.coordinator.group_coordinator import partition_for
from odradek import Admin, Consumer, NewTopic, TopicPartition
from tests.containers.checker import Row
from tests.containers.cluster import SESSION_TIMEOUT_MS, ContainerCluster, now_s
from tests.containers.txn_checker import check_txn
from tests.containers.txn_workload import (
    GROUP,
    INPUT,
    OUTPUT,
    PARTITIONS,
    TxnWorkload,
    transactional_id,
)
from tests.integration.helpers import wait_for

pytestmark = pytest.mark.containers

TRANSACTION_STATE = "__transaction_state"
OFFSETS = "__consumer_offsets"
INTERNAL_PARTITIONS = 50
"""``transaction.state.log.num.partitions`` and ``offsets.topic.num.partitions`` (defaults)."""
OPEN_STATES = ("Ongoing", "PrepareCommit", "PrepareAbort", "PrepareEpochFence")
FROZEN_AFTER_MOVE_S = 15.0
"""How long the paused group coordinator stays frozen after its partitions moved: every client
sees it leave the metadata (it is listed 5 s after it left) and works with the new coordinator
meanwhile, or waits for it (see ``pause_group_coordinator``)."""
SETTLE_S = 60.0
"""How long the open transactions and last stable offsets may take to settle after the
processors stop (markers are written after EndTxn is answered)."""


def leader_of(cluster: ContainerCluster, topic: str, partition: int) -> int:
    def leader() -> int | None:
        found, _ = cluster.partition_states(topic, partition + 1)[partition]
        return found if found > 0 else None

    return wait_for(leader, f"{topic}-{partition} to have a leader", 60)


def wait_moved(cluster: ContainerCluster, topic: str, partition: int, old: int) -> int:
    def moved() -> int | None:
        leader, _ = cluster.partition_states(topic, partition + 1)[partition]
        return leader if leader not in (-1, old) else None

    return wait_for(moved, f"{topic}-{partition}'s leadership to move off node {old}", 60)


def wait_healed(cluster: ContainerCluster, timeout_s: float = 90.0) -> None:
    """Every node registered and serving, every partition of both topics led with three
    in-sync replicas."""

    def full() -> bool:
        return (
            all(
                leader > 0 and isr == set(cluster.nodes)
                for topic in (INPUT, OUTPUT)
                for leader, isr in cluster.partition_states(topic, PARTITIONS).values()
            )
            and cluster.registered_nodes() == set(cluster.nodes)
            and all(node.serving() for node in cluster.nodes.values())
        )

    wait_for(full, "every node serving and both topics with 3 in-sync replicas", timeout_s)


def wait_commits(workload: TxnWorkload, count: int = 5, timeout_s: float = 90.0) -> None:
    """Waits until ``count`` more transactions are committed: the loop makes progress."""
    target = workload.committed() + count
    try:
        wait_for(lambda: workload.committed() >= target, f"{count} more commits", timeout_s)
    except AssertionError as e:
        raise AssertionError(f"{e}\n{workload.report()}") from None


def kill_and_restart(
    cluster: ContainerCluster, workload: TxnWorkload, what: str, topic: str, partition: int
) -> None:
    """SIGKILL of ``topic``-``partition``'s leader until another node leads it and the loop
    commits again; then the node is started again."""
    victim = leader_of(cluster, topic, partition)
    print(f"\n{what}: node {victim} (leader of {topic}-{partition})")
    workload.fault(what)
    cluster.kill(victim)
    wait_moved(cluster, topic, partition, victim)
    wait_commits(workload)
    workload.healed()
    cluster.start_node(victim)
    wait_healed(cluster)


def kill_output_leader(cluster: ContainerCluster, workload: TxnWorkload) -> None:
    kill_and_restart(cluster, workload, "kill output leader", OUTPUT, 0)


def kill_coordinator(cluster: ContainerCluster, workload: TxnWorkload) -> None:
    partition = partition_for(transactional_id(0), INTERNAL_PARTITIONS)
    kill_and_restart(cluster, workload, "kill coordinator", TRANSACTION_STATE, partition)


def kill_controller(cluster: ContainerCluster, workload: TxnWorkload) -> None:
    controller = wait_for(lambda: (c := cluster.controller_id()) > 0 and c, "a controller")
    print(f"\nkill controller: node {controller}")
    workload.fault("kill controller")
    cluster.kill(controller)
    wait_for(
        lambda: cluster.controller_id() not in (-1, controller), "another node to be controller"
    )
    wait_commits(workload)
    workload.healed()
    cluster.start_node(controller)
    wait_healed(cluster)


def pause_group_coordinator(cluster: ContainerCluster, workload: TxnWorkload) -> None:
    partition = partition_for(GROUP, INTERNAL_PARTITIONS)
    victim = leader_of(cluster, OFFSETS, partition)
    print(f"\npause broker: node {victim} (the group coordinator, {OFFSETS}-{partition})")
    workload.fault("pause broker")
    cluster.pause(victim)
    try:
        wait_for(
            lambda: victim not in cluster.registered_nodes(),
            f"node {victim}'s ZooKeeper session to expire",
            SESSION_TIMEOUT_MS / 1000 + 30,
        )
        wait_moved(cluster, OFFSETS, partition, victim)
        time.sleep(FROZEN_AFTER_MOVE_S)
    finally:
        cluster.unpause(victim)
    # Progress is awaited once the node is back, not while it is frozen: a processor whose
    # producer cached the frozen node as the group coordinator stays blocked in
    # send_offsets_to_transaction until the node is back (librdkafka#5511, see txn_workload),
    # and while it does not poll, the group's rebalance (a member's session ran out during the
    # move) waits for it: no processor gets records (seen: 90 s without a commit).
    wait_commits(workload)
    workload.healed()
    wait_healed(cluster)


FAULTS: list[Callable[[ContainerCluster, TxnWorkload], None]] = [
    kill_output_leader,
    kill_coordinator,
    kill_controller,
    pause_group_coordinator,
]


def read_log(
    bootstrap: str, topic: str, isolation: str = "read_uncommitted"
) -> dict[int, list[tuple[int, bytes]]]:
    """Every partition of ``topic`` up to its end (its last stable offset read_committed), read
    by a fresh SDK consumer with ``isolation``."""
    out: dict[int, list[tuple[int, bytes]]] = {p: [] for p in range(PARTITIONS)}
    tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
    with Consumer(
        bootstrap,
        auto_offset_reset="earliest",
        isolation_level=isolation,  # type: ignore[arg-type]
    ) as consumer:
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        ends = consumer.end_offsets(tps)
        deadline = now_s() + 60
        while any(consumer.position(tp) < ends[tp] for tp in tps):
            assert now_s() < deadline, f"reading {topic} {isolation} took more than 60 s"
            for record in consumer.poll(timeout_ms=500):
                out[record.partition].append((record.offset, record.value or b""))
    return out


def end_offsets(bootstrap: str, topic: str, isolation: str) -> dict[int, int]:
    with Consumer(bootstrap, isolation_level=isolation) as consumer:  # type: ignore[arg-type]
        ends = consumer.end_offsets([TopicPartition(topic, p) for p in range(PARTITIONS)])
    return {tp.partition: offset for tp, offset in ends.items()}


def group_offsets(kafka_bootstrap: str) -> dict[int, int]:
    """The group's committed offsets of the input (stable: librdkafka asks with
    require_stable under read_committed), -1 where none."""
    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": kafka_bootstrap,
            "group.id": GROUP,
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
        }
    )
    try:
        found = consumer.committed(
            [confluent_kafka.TopicPartition(INPUT, p) for p in range(PARTITIONS)], 30
        )
    finally:
        consumer.close()
    return {tp.partition: tp.offset for tp in found}


def open_transactions(bootstrap: str) -> list[str]:
    with Admin(bootstrap, request_timeout_ms=10_000) as admin:
        return [
            f"{t.transactional_id} ({t.state} at node {t.coordinator_id})"
            for t in admin.list_transactions(states=OPEN_STATES)
        ]


def settled(bootstrap: str) -> tuple[list[str], dict[int, tuple[int, int]]]:
    """The open transactions and each output partition's (last stable offset, high watermark),
    once none is open and every LSO is its high watermark, or as they are after ``SETTLE_S``."""
    state: list[tuple[list[str], dict[int, tuple[int, int]]]] = []

    def done() -> bool:
        lso = end_offsets(bootstrap, OUTPUT, "read_committed")
        hw = end_offsets(bootstrap, OUTPUT, "read_uncommitted")
        state[:] = [(open_transactions(bootstrap), {p: (lso[p], hw[p]) for p in hw})]
        opened, stable = state[0]
        return not opened and all(a == b for a, b in stable.values())

    try:
        wait_for(done, "no open transaction and every output LSO at its high watermark", SETTLE_S)
    except AssertionError:
        assert state, "the cluster never answered ListTransactions and ListOffsets"
    return state[0]


def test_read_process_write_under_faults(cluster: ContainerCluster, verdicts: list[Row]) -> None:
    """Issue 32: a transactional read-process-write loop through a killed output leader, a
    killed transaction coordinator, a killed controller and a paused group coordinator; every
    input once in the committed output, nothing aborted read, offsets matching, nothing open."""
    name = "txn read-process-write (4 faults)"
    bootstrap, kafka = cluster.bootstrap_servers, cluster.kafka_bootstrap_servers
    with Admin(bootstrap, request_timeout_ms=10_000) as admin:
        created = admin.create_topics(
            [
                NewTopic(topic, PARTITIONS, 3, configs={"min.insync.replicas": "2"})
                for topic in (INPUT, OUTPUT)
            ]
        )
    assert created == {INPUT: None, OUTPUT: None}
    wait_healed(cluster)
    workload = TxnWorkload(kafka)
    workload.start()
    try:
        wait_commits(workload, 20, timeout_s=120)
        for fault in FAULTS:
            fault(cluster, workload)
        wait_commits(workload, 10)
        workload.stop_input()
        inputs_end = end_offsets(bootstrap, INPUT, "read_uncommitted")
        wait_for(
            lambda: group_offsets(kafka) == inputs_end,
            f"the processors to commit the input's end {inputs_end}",
            120,
        )
    finally:
        history = workload.stop()
    opened, stable = settled(bootstrap)
    verdict = check_txn(
        name,
        history,
        read_log(bootstrap, INPUT),
        read_log(bootstrap, OUTPUT, "read_committed"),
        read_log(bootstrap, OUTPUT),
        group_offsets(kafka),
        opened,
        stable,
    )
    verdicts.append(verdict)
    print(
        f"\n{name}: {verdict.inputs} inputs, {verdict.outputs} committed outputs, "
        f"{verdict.committed} transactions committed, {verdict.aborted} aborted, "
        f"{verdict.unknown} unknown; {verdict.aborted_records} aborted records in the output; "
        f"{len(verdict.lost)} lost, {len(verdict.duplicated)} duplicated; the live reader read "
        f"{verdict.reads}; {history.producers_replaced} producers replaced, "
        f"{history.rewinds} rewinds, {history.input_errors} failed inputs"
    )
    print(f"{name}: processors' errors: {dict(history.errors)}")
    print(f"{name}: longest time without a commit per fault: {verdict.row()[-1]}")
    assert verdict.violations == {}, verdict.violations
