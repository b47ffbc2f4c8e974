"""The requests the controller builds from its context (pure)."""

from __future__ import annotations

from controller.context import ControllerContext, LiveBroker
from controller.reassignment import ReplicaAssignment
from controller.request_batch import RequestBatch, build_update_metadata
from controller.zk_data import BrokerRegistrationInfo, LeaderIsrAndControllerEpoch, TopicPartition
from odradek.v1 import odradek_pb2 as pb

A0, A1, B0 = TopicPartition("a", 0), TopicPartition("a", 1), TopicPartition("b", 0)


def context() -> ControllerContext:
    ctx = ControllerContext(epoch=4, epoch_zk_version=4, cluster_id="cid")
    for b, epoch in ((1, 100), (2, 200), (3, 300)):
        info = BrokerRegistrationInfo(b, "127.0.0.1", 9000 + b, "r1" if b == 1 else None)
        ctx.live_brokers[b] = LiveBroker(info, epoch)
    ctx.add_topic(
        "a",
        "id-a",
        {0: ReplicaAssignment((1, 2, 4)), 1: ReplicaAssignment((4, 5))},
        {"retention.ms": "10"},
    )
    ctx.add_topic("b", "id-b", {0: ReplicaAssignment((3, 1, 2), (3,), (2,))}, {})
    ctx.states[A0] = LeaderIsrAndControllerEpoch(2, 7, (2, 1), 3, 11)
    ctx.states[B0] = LeaderIsrAndControllerEpoch(1, 0, (1, 2), 4, 0)
    return ctx


def test_update_metadata_is_a_full_snapshot_for_the_receiver():
    ctx = context()
    req = build_update_metadata(ctx, controller_id=9, broker_id=2)
    assert (req.controller_id, req.controller_epoch, req.broker_epoch) == (9, 4, 200)
    assert req.cluster_id == "cid"
    assert [(b.node_id, b.port, b.rack) for b in req.live_brokers] == [
        (1, 9001, "r1"),
        (2, 9002, ""),
        (3, 9003, ""),
    ]
    states = {(p.topic, p.partition): p for p in req.partition_states}
    assert set(states) == {("a", 0), ("a", 1), ("b", 0)}
    a0 = states["a", 0]
    assert (a0.leader, a0.leader_epoch, list(a0.isr), a0.partition_epoch, a0.controller_epoch) == (
        2,
        7,
        [2, 1],
        11,
        3,
    )
    assert list(a0.replicas) == [1, 2, 4] and list(a0.offline_replicas) == [4]
    assert a0.topic_id == "id-a"
    a1 = states["a", 1]  # no state yet: offline, epochs -1
    assert (a1.leader, a1.leader_epoch, a1.partition_epoch, list(a1.isr)) == (-1, -1, -1, [])
    assert list(a1.offline_replicas) == [4, 5]
    b0 = states["b", 0]
    assert (list(b0.adding_replicas), list(b0.removing_replicas)) == ([3], [2])
    configs = {c.name: dict(c.configs) for c in req.topic_configs}
    assert configs == {"a": {"retention.ms": "10"}, "b": {}}


def test_topics_being_deleted_leave_the_metadata():
    ctx = context()
    ctx.topics_to_delete.add("a")
    req = build_update_metadata(ctx, 9, 1)
    assert {p.topic for p in req.partition_states} == {"b"}
    assert [c.name for c in req.topic_configs] == ["b"]


def test_batch_orders_leader_and_isr_then_metadata_then_stop_replica():
    ctx = context()
    batch = RequestBatch()
    batch.add_stop_replica(3, B0, 0, delete=False)
    batch.add_deletion(1, A0)
    batch.add_leader_and_isr([1, 2, 4], A0)  # 4 is not registered: skipped
    batch.add_leader_and_isr([1], B0)
    batch.add_leader_and_isr([1], A1)  # no state: not in LeaderAndIsr
    out = batch.build(ctx, 9)
    kinds = [(r.broker_id, type(r.request).__name__, r.deletion) for r in out]
    assert kinds == [
        (1, "LeaderAndIsrRequest", False),
        (2, "LeaderAndIsrRequest", False),
        (1, "UpdateMetadataRequest", False),
        (2, "UpdateMetadataRequest", False),
        (3, "UpdateMetadataRequest", False),
        (3, "StopReplicaRequest", False),
        (1, "StopReplicaRequest", True),
    ]
    lai = out[0].request
    assert isinstance(lai, pb.LeaderAndIsrRequest)
    assert lai.broker_epoch == 100
    assert [(p.topic, p.partition) for p in lai.partition_states] == [("a", 0), ("b", 0)]
    assert sorted(b.node_id for b in lai.live_leaders) == [1, 2]
    assert sorted(c.name for c in lai.topic_configs) == ["a", "b"]
    deletion = out[-1].request
    assert isinstance(deletion, pb.StopReplicaRequest)
    assert [(p.topic, p.leader_epoch, p.delete_partition) for p in deletion.partitions] == [
        ("a", -2, True)
    ]
    assert batch.is_empty()
    assert batch.build(ctx, 9) == []


def test_stop_replica_delete_is_sticky():
    ctx = context()
    batch = RequestBatch()
    batch.add_stop_replica(3, B0, 1, delete=True)
    batch.add_stop_replica(3, B0, 2, delete=False)
    stop = [r.request for r in batch.build(ctx, 9) if isinstance(r.request, pb.StopReplicaRequest)]
    assert [(p.leader_epoch, p.delete_partition) for p in stop[0].partitions] == [(2, True)]
