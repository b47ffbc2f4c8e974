"""Topic creation, deletion and configs through the Admin service, carried out by the
controller: the znodes it writes and what it tells the brokers."""

from __future__ import annotations

import json
from functools import partial

from controller.zk_data import (
    BrokerIdZNode,
    BrokerRegistrationInfo,
    ConfigEntityZNode,
    TopicAssignment,
    TopicPartition,
    TopicZNode,
)
from odradek.v1 import odradek_pb2 as pb
from tests.integration.controller.cluster import CTX, Cluster, wait_for


def create(cluster: Cluster, *topics: pb.CreatableTopic, validate_only=False, timeout_ms=10_000):
    return cluster.admin.CreateTopics(
        pb.CreateTopicsRequest(topics=topics, timeout_ms=timeout_ms, validate_only=validate_only),
        CTX,
    ).topics


def test_create_topic_writes_znodes_elects_leaders_and_tells_brokers(cluster):
    brokers = [cluster.add_broker(b) for b in (1, 2, 3)]
    controller = cluster.add_controller(1)
    cluster.active()
    [result] = create(
        cluster,
        pb.CreatableTopic(
            name="orders",
            num_partitions=3,
            replication_factor=2,
            configs={"retention.ms": "60000"},
        ),
    )
    assert (result.name, result.error_code) == ("orders", 0)

    assignment = cluster.assignment("orders")
    assert assignment is not None and assignment.topic_id and len(assignment.topic_id) == 22
    assert sorted(assignment.partitions) == [0, 1, 2]
    assert all(len(set(r)) == 2 for r in assignment.partitions.values())
    assert sorted(r[0] for r in assignment.partitions.values()) == [1, 2, 3]  # leaders spread
    raw = json.loads(cluster.observer.get(TopicZNode.path("orders"))[0])
    assert raw["version"] == 3
    config, _ = cluster.observer.get(ConfigEntityZNode.path("orders"))
    assert json.loads(config) == {"version": 1, "config": {"retention.ms": "60000"}}

    for p, replicas in assignment.partitions.items():
        tp = TopicPartition("orders", p)
        state = cluster.state(tp)
        assert state is not None
        assert (state.leader, state.isr, state.leader_epoch) == (replicas[0], replicas, 0)
        assert (state.controller_epoch, state.partition_epoch) == (controller.epoch, 0)
        for b in replicas:
            sent = wait_for(partial(cluster.brokers[b].leader_and_isr, tp), "LeaderAndIsr")
            assert (sent[-1].leader, list(sent[-1].isr), sent[-1].leader_epoch) == (
                replicas[0],
                list(replicas),
                0,
            )
            assert list(sent[-1].replicas) == list(replicas)
            assert sent[-1].topic_id == assignment.topic_id
        others = set(cluster.brokers) - set(replicas)
        assert all(not cluster.brokers[b].leader_and_isr(tp) for b in others)

    def metadata_has_topic(broker):
        md = broker.last_metadata()
        return md is not None and {p.topic for p in md.partition_states} == {"orders"} and md

    for broker in brokers:
        md = wait_for(partial(metadata_has_topic, broker), "UpdateMetadata")
        assert md.broker_epoch == broker.epoch
        assert (md.controller_id, md.controller_epoch) == (1, controller.epoch)
        assert md.cluster_id
        assert sorted(b.node_id for b in md.live_brokers) == [1, 2, 3]
        assert len(md.partition_states) == 3
        assert {c.name: dict(c.configs) for c in md.topic_configs} == {
            "orders": {"retention.ms": "60000"}
        }
    lai = brokers[0].replication.requests(pb.LeaderAndIsrRequest)[-1]
    assert {c.name for c in lai.topic_configs} == {"orders"}
    assert lai.live_leaders


def test_create_topic_rack_aware(cluster):
    for b, rack in ((1, "a"), (2, "a"), (3, "b"), (4, "b")):
        cluster.add_broker(b, rack)
    cluster.add_controller(1)
    [result] = create(cluster, pb.CreatableTopic(name="t", num_partitions=8, replication_factor=2))
    assert result.error_code == 0
    assignment = cluster.assignment("t")
    assert assignment is not None
    rack_of = {1: "a", 2: "a", 3: "b", 4: "b"}
    for replicas in assignment.partitions.values():
        assert {rack_of[b] for b in replicas} == {"a", "b"}


def test_create_topic_errors(cluster):
    cluster.add_broker(1)
    cluster.add_broker(2)
    cluster.add_controller(1)
    [ok] = create(cluster, pb.CreatableTopic(name="o.k", num_partitions=1, replication_factor=2))
    assert ok.error_code == 0
    results = create(
        cluster,
        pb.CreatableTopic(name="o.k", num_partitions=1, replication_factor=1),
        pb.CreatableTopic(name="bad name!", num_partitions=1, replication_factor=1),
        pb.CreatableTopic(name="o_k", num_partitions=1, replication_factor=1),  # collides
        pb.CreatableTopic(name="rf", num_partitions=1, replication_factor=3),
        pb.CreatableTopic(name="parts", num_partitions=0, replication_factor=1),
        pb.CreatableTopic(name="cfg", num_partitions=1, replication_factor=1, configs={"x.y": "1"}),
        pb.CreatableTopic(
            name="cfg2", num_partitions=1, replication_factor=1, configs={"retention.ms": "soon"}
        ),
        pb.CreatableTopic(
            name="assign",
            num_partitions=-1,
            replication_factor=-1,
            assignments=[pb.ReplicaAssignment(partition=0, broker_ids=[1, 9])],
        ),
        pb.CreatableTopic(
            name="both",
            num_partitions=2,
            replication_factor=-1,
            assignments=[pb.ReplicaAssignment(partition=0, broker_ids=[1])],
        ),
    )
    assert [(r.name, r.error_code) for r in results] == [
        ("o.k", 36),
        ("bad name!", 17),
        ("o_k", 17),
        ("rf", 38),
        ("parts", 37),
        ("cfg", 40),
        ("cfg2", 40),
        ("assign", 39),
        ("both", 42),
    ]
    assert cluster.observer.get_children("/brokers/topics") == ["o.k"]


def test_validate_only_writes_nothing(cluster):
    cluster.add_broker(1)
    [result] = create(
        cluster,
        pb.CreatableTopic(name="t", num_partitions=2, replication_factor=1),
        validate_only=True,
    )
    assert result.error_code == 0
    assert cluster.assignment("t") is None
    assert cluster.observer.exists(ConfigEntityZNode.path("t")) is None


def test_without_a_controller_creation_times_out_but_the_topic_exists(cluster):
    cluster.add_broker(1)
    [result] = create(
        cluster, pb.CreatableTopic(name="t", num_partitions=1, replication_factor=1), timeout_ms=200
    )
    assert result.error_code == 7  # REQUEST_TIMED_OUT
    assert cluster.assignment("t") is not None
    cluster.add_controller(1)  # a controller that comes later starts it
    cluster.wait_state(TopicPartition("t", 0), lambda s: s.leader == 1, "leader 1")


def test_partition_without_live_replica_stays_offline_until_one_registers(cluster):
    cluster.add_broker(1)
    cluster.add_controller(1)
    cluster.active()
    # Written directly, as an external tool could: replicas on brokers that are not registered.
    cluster.observer.create(
        TopicZNode.path("far"),
        TopicZNode.encode(
            TopicAssignment(partitions={0: (5, 6)}, topic_id="AAECAwQFBgcICQoLDA0ODw")
        ),
    )
    tp = TopicPartition("far", 0)

    def offline_in_metadata():
        md = cluster.brokers[1].last_metadata()
        states = [p for p in md.partition_states if p.topic == "far"] if md else []
        return states and states[0]

    state = wait_for(offline_in_metadata, "the offline partition in UpdateMetadata")
    assert (state.leader, state.leader_epoch, list(state.offline_replicas)) == (-1, -1, [5, 6])
    assert cluster.state(tp) is None
    six = cluster.add_broker(6)
    state = cluster.wait_state(tp, lambda s: s.leader == 6, "broker 6 to lead")
    assert state.isr == (6,) and state.leader_epoch == 0
    wait_for(lambda: six.leader_and_isr(tp), "LeaderAndIsr to broker 6")


def test_delete_topic_stops_and_deletes_replicas_then_removes_znodes(cluster):
    brokers = [cluster.add_broker(b) for b in (1, 2, 3)]
    cluster.add_controller(1)
    cluster.create_topic("doomed", {0: [1, 2], 1: [2, 3]})
    cluster.create_topic("kept", {0: [3]})
    response = cluster.admin.DeleteTopics(
        pb.DeleteTopicsRequest(names=["doomed", "nope"], timeout_ms=10_000), None
    )
    assert [(t.name, t.error_code) for t in response.topics] == [("doomed", 0), ("nope", 3)]
    assert cluster.assignment("doomed") is None
    assert cluster.observer.exists(ConfigEntityZNode.path("doomed")) is None
    assert cluster.observer.get_children("/admin/delete_topics") == []
    for broker in brokers:
        for p in (0, 1):
            stops = broker.stop_replicas(TopicPartition("doomed", p))
            replicas = {0: [1, 2], 1: [2, 3]}[p]
            if broker.node_id in replicas:
                assert [(s.leader_epoch, s.delete_partition) for s in stops] == [(-2, True)]
            else:
                assert stops == []

    def metadata_without_doomed(broker):
        md = broker.last_metadata()
        return md is not None and {p.topic for p in md.partition_states} == {"kept"}

    for broker in brokers:
        wait_for(partial(metadata_without_doomed, broker), "metadata without it")


def test_deletion_waits_for_a_dead_replica_to_return(cluster):
    cluster.add_broker(1)
    two = cluster.add_broker(2)
    cluster.add_controller(1)
    cluster.create_topic("t", {0: [1, 2]})
    two.kill()
    response = cluster.admin.DeleteTopics(pb.DeleteTopicsRequest(names=["t"], timeout_ms=300), CTX)
    assert response.topics[0].error_code == 7  # still pending: broker 2 has not confirmed
    assert cluster.assignment("t") is not None
    two.start()
    wait_for(lambda: cluster.assignment("t") is None, "the deletion to finish")
    assert [s.delete_partition for s in two.stop_replicas(TopicPartition("t", 0))] == [True]


def test_describe_and_alter_configs(cluster):
    broker = cluster.add_broker(1)
    cluster.add_controller(1)
    cluster.create_topic("t", {0: [1]}, {"cleanup.policy": "compact"})

    def describe():
        [item] = cluster.admin.DescribeConfigs(pb.DescribeConfigsRequest(topics=["t"]), CTX).topics
        return {e.name: (e.value, e.is_default) for e in item.entries}

    entries = describe()
    assert entries["cleanup.policy"] == ("compact", False)
    assert entries["retention.ms"] == ("604800000", True)
    assert entries["unclean.leader.election.enable"] == ("false", True)
    missing = cluster.admin.DescribeConfigs(pb.DescribeConfigsRequest(topics=["x"]), CTX)
    assert missing.topics[0].error_code == 3

    response = cluster.admin.AlterConfigs(
        pb.AlterConfigsRequest(
            topics=[
                pb.AlterableTopicConfig(
                    name="t", set={"retention.ms": "1000"}, delete=["cleanup.policy"]
                ),
                pb.AlterableTopicConfig(name="x", set={"retention.ms": "1"}),
                pb.AlterableTopicConfig(name="t2", set={}),
            ]
        ),
        CTX,
    )
    assert [(r.name, r.error_code) for r in response.topics] == [("t", 0), ("x", 3), ("t2", 3)]
    entries = describe()
    assert entries["retention.ms"] == ("1000", False)
    assert entries["cleanup.policy"] == ("delete", True)

    def configs_in_metadata():
        md = broker.last_metadata()
        return md is not None and {c.name: dict(c.configs) for c in md.topic_configs} == {
            "t": {"retention.ms": "1000"}
        }

    wait_for(configs_in_metadata, "the new overrides in UpdateMetadata")

    bad = cluster.admin.AlterConfigs(
        pb.AlterConfigsRequest(
            topics=[pb.AlterableTopicConfig(name="t", set={"min.insync.replicas": "0"})]
        ),
        CTX,
    )
    assert bad.topics[0].error_code == 40
    only_validate = cluster.admin.AlterConfigs(
        pb.AlterConfigsRequest(
            topics=[pb.AlterableTopicConfig(name="t", set={"retention.ms": "5"})],
            validate_only=True,
        ),
        CTX,
    )
    assert only_validate.topics[0].error_code == 0
    assert describe()["retention.ms"] == ("1000", False)


def test_broker_registration_info_reaches_metadata(cluster):
    cluster.add_broker(1, rack="r1")
    cluster.add_controller(1)
    md = wait_for(lambda: cluster.brokers[1].last_metadata(), "UpdateMetadata")
    [info] = md.live_brokers
    data, _ = cluster.observer.get(BrokerIdZNode.path(1))
    assert BrokerIdZNode.decode(1, data) == BrokerRegistrationInfo(1, info.host, info.port, "r1")
    assert info.rack == "r1"
