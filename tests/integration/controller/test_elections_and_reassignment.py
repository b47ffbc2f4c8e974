"""Preferred leader election and partition reassignment through the Admin service."""

from __future__ import annotations

from controller.zk_data import TopicPartition
from odradek.v1 import odradek_pb2 as pb
from tests.integration.controller.cluster import CTX, Cluster, wait_for

TP = TopicPartition("t", 0)


def elect_preferred(cluster: Cluster, *tps: TopicPartition) -> list[tuple[str, int, int]]:
    response = cluster.admin.ElectLeaders(
        pb.ElectLeadersRequest(
            election_type=pb.PREFERRED,
            partitions=[pb.TopicPartition(topic=tp.topic, partition=tp.partition) for tp in tps],
            timeout_ms=10_000,
        ),
        CTX,
    )
    return [(p.topic, p.partition, p.error_code) for p in response.partitions]


def test_preferred_leader_election(cluster):
    one, _two = cluster.add_broker(1), cluster.add_broker(2)
    cluster.add_controller(9)
    cluster.create_topic("t", {0: [1, 2], 1: [2, 1]})
    one.kill()
    cluster.wait_state(TP, lambda s: s.leader == 2, "leader 2")
    one.start()
    one.wait_known()
    # Back, but not in the ISR yet: its preferred leadership cannot be restored.
    assert elect_preferred(cluster, TP) == [("t", 0, 80)]  # PREFERRED_LEADER_NOT_AVAILABLE
    cluster.alter_isr(TP, [2, 1])
    before = cluster.state(TP)
    # Every partition: t-0 moves back to 1, t-1 is already led by 2; unknown partitions fail.
    response = cluster.admin.ElectLeaders(
        pb.ElectLeadersRequest(election_type=pb.PREFERRED, timeout_ms=10_000), None
    )
    assert sorted((p.topic, p.partition, p.error_code) for p in response.partitions) == [
        ("t", 0, 0),
        ("t", 1, 84),  # ELECTION_NOT_NEEDED
    ]
    after = cluster.state(TP)
    assert (after.leader, after.isr, after.leader_epoch) == (1, (2, 1), before.leader_epoch + 1)
    assert elect_preferred(cluster, TP, TopicPartition("t", 7)) == [("t", 0, 84), ("t", 7, 3)]
    wait_for(lambda: [p for p in one.leader_and_isr(TP) if p.leader == 1], "LAI: 1 leads")
    assert cluster.observer.exists("/admin/preferred_replica_election") is None


def test_auto_leader_rebalance(cluster):
    from controller.controller import ControllerConfig
    from tests.integration.controller.cluster import CONFIG

    one, _two = cluster.add_broker(1), cluster.add_broker(2)
    config = ControllerConfig(
        request_timeout_ms=CONFIG.request_timeout_ms,
        retry_backoff_ms=CONFIG.retry_backoff_ms,
        auto_leader_rebalance_enable=True,
        leader_imbalance_check_interval_ms=200,
    )
    cluster.add_controller(9, config)
    cluster.create_topic("t", {0: [1, 2]})
    one.kill()
    cluster.wait_state(TP, lambda s: s.leader == 2, "leader 2")
    one.start()
    one.wait_known()
    cluster.alter_isr(TP, [2, 1])
    cluster.wait_state(TP, lambda s: s.leader == 1, "the rebalance to restore leader 1")


def reassign(cluster: Cluster, tp: TopicPartition, replicas=None, cancel=False) -> int:
    response = cluster.admin.AlterPartitionReassignments(
        pb.AlterPartitionReassignmentsRequest(
            partitions=[
                pb.ReassignablePartition(
                    topic=tp.topic, partition=tp.partition, replicas=replicas or [], cancel=cancel
                )
            ],
            timeout_ms=10_000,
        ),
        CTX,
    )
    assert response.error_code == 0
    return response.partitions[0].error_code


def ongoing(cluster: Cluster):
    response = cluster.admin.ListPartitionReassignments(pb.ListPartitionReassignmentsRequest(), CTX)
    return [
        (r.topic, r.partition, list(r.replicas), list(r.adding_replicas), list(r.removing_replicas))
        for r in response.reassignments
    ]


def test_reassignment_runs_to_completion_as_the_new_replicas_join_the_isr(cluster):
    one, two, three = (cluster.add_broker(b) for b in (1, 2, 3))
    cluster.add_controller(9)
    cluster.create_topic("t", {0: [1, 2]})
    assert reassign(cluster, TP, [2, 3]) == 0

    # Phase A: RS = [2, 3, 1], adding 3, removing 1; leader epoch + 1; 3 learns it must fetch.
    assignment = cluster.assignment("t")
    assert assignment is not None
    assert (assignment.partitions[0], assignment.adding_replicas, assignment.removing_replicas) == (
        (2, 3, 1),
        {0: (3,)},
        {0: (1,)},
    )
    state = cluster.state(TP)
    assert (state.leader, state.isr, state.leader_epoch) == (1, (1, 2), 1)
    assert ongoing(cluster) == [("t", 0, [2, 3, 1], [3], [1])]
    lai = wait_for(lambda: three.leader_and_isr(TP), "LeaderAndIsr to the new replica")
    assert (list(lai[-1].replicas), list(lai[-1].adding_replicas)) == ([2, 3, 1], [3])

    # The new replica catches up; the leader adds it to the ISR; the controller completes:
    # leadership leaves the removed replica, which is stopped and deleted.
    cluster.alter_isr(TP, [1, 2, 3])
    state = cluster.wait_state(TP, lambda s: s.leader == 2, "leader 2 from the targets")
    assert (state.isr, state.leader_epoch) == ((2, 3), 2)
    wait_for(lambda: ongoing(cluster) == [], "the reassignment to finish")
    assignment = cluster.assignment("t")
    assert assignment is not None
    assert (assignment.partitions[0], assignment.adding_replicas, assignment.removing_replicas) == (
        (2, 3),
        {},
        {},
    )
    stops = wait_for(lambda: one.stop_replicas(TP), "StopReplica to the removed replica")
    assert [s.delete_partition for s in stops] == [True]
    lai = wait_for(lambda: [p for p in two.leader_and_isr(TP) if p.leader_epoch == 2], "LAI")
    assert (lai[-1].leader, list(lai[-1].replicas)) == (2, [2, 3])
    assert not [p for p in one.leader_and_isr(TP) if p.leader_epoch == 2]


def test_reassignment_errors_and_cancel(cluster):
    cluster.add_broker(1)
    cluster.add_broker(2)
    three = cluster.add_broker(3)
    cluster.add_controller(9)
    cluster.create_topic("t", {0: [1, 2]})
    assert reassign(cluster, TP, cancel=True) == 85  # NO_REASSIGNMENT_IN_PROGRESS
    assert reassign(cluster, TP, [1, 7]) == 39  # broker 7 is not registered
    assert reassign(cluster, TP, [1, 1]) == 39
    assert reassign(cluster, TopicPartition("t", 5), [1]) == 3
    assert reassign(cluster, TP, [3]) == 0
    assert ongoing(cluster) == [("t", 0, [3, 1, 2], [3], [1, 2])]
    assert reassign(cluster, TP, cancel=True) == 0
    assert ongoing(cluster) == []
    assignment = cluster.assignment("t")
    assert assignment is not None and assignment.partitions[0] == (1, 2)
    state = cluster.state(TP)
    assert (state.leader, state.isr) == (1, (1, 2))
    stops = wait_for(lambda: three.stop_replicas(TP), "StopReplica to the dropped replica")
    assert [s.delete_partition for s in stops] == [True]


def test_a_new_controller_finishes_a_reassignment_it_finds_in_zookeeper(cluster):
    cluster.add_broker(1)
    cluster.add_broker(2)
    cluster.add_broker(3)
    first = cluster.add_controller(8)
    cluster.create_topic("t", {0: [1, 2]})
    assert reassign(cluster, TP, [2, 3]) == 0  # started by the first controller ...
    first_epoch = first.epoch
    cluster.kill_controller(first)
    second = cluster.add_controller(9)
    assert cluster.active() is second
    assert ongoing(cluster) == [("t", 0, [2, 3, 1], [3], [1])]  # ... found in ZooKeeper
    cluster.alter_isr(TP, [1, 2, 3], controller=second)
    state = cluster.wait_state(TP, lambda s: s.isr == (2, 3), "completion by the second")
    assert state.leader == 2  # the first target replica in the ISR
    assert state.controller_epoch == second.epoch == first_epoch + 1
    wait_for(lambda: ongoing(cluster) == [], "no reassignment left")
