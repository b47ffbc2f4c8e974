"""The admin client against in-process gRPC nodes: per-item results for changes, raised errors
for questions, requests carried to the wire as the proto says."""

from __future__ import annotations

import grpc
import pytest

from odradek import Admin, ConfigChange, ConfigEntry, NewTopic, TopicPartition
from odradek.admin import ClusterDescription, OngoingReassignment
from odradek.client.errors import NetworkError
from odradek.errors import (
    ElectionNotNeededError,
    InvalidConfigError,
    InvalidReplicationFactorError,
    NoReassignmentInProgressError,
    NotControllerError,
    OffsetOutOfRangeError,
    TopicAlreadyExistsError,
    UnknownTopicOrPartitionError,
)
from odradek.records import Record, build_batch


@pytest.fixture
def admin(cluster):
    with Admin(cluster.bootstrap, retry_backoff_ms=10, default_api_timeout_ms=2000) as client:
        yield client


def test_create_topics_reports_each_topic(cluster, admin):
    cluster.create_topic("taken", 1)
    results = admin.create_topics(
        [
            NewTopic("fresh", 3, 2, configs={"cleanup.policy": "compact"}),
            NewTopic("taken", 1, 1),
            NewTopic("too-wide", 1, 5),
        ],
        timeout_ms=1234,
    )
    assert results["fresh"] is None
    assert isinstance(results["taken"], TopicAlreadyExistsError)
    assert "'taken' already exists" in results["taken"].message
    assert isinstance(results["too-wide"], InvalidReplicationFactorError)
    (_, request) = cluster.calls_of("CreateTopics")[0]
    assert request.timeout_ms == 1234 and not request.validate_only
    assert request.topics[0].configs == {"cleanup.policy": "compact"}
    assert len(cluster.topics["fresh"]) == 3
    assert cluster.configs["fresh"] == {"cleanup.policy": "compact"}


def test_create_with_explicit_assignments_and_validate_only(cluster, admin):
    results = admin.create_topics(
        [NewTopic("placed", assignments={0: [3, 1], 1: [1, 2]})], validate_only=True
    )
    assert results == {"placed": None}
    assert "placed" not in cluster.topics
    admin.create_topics([NewTopic("placed", assignments={0: [3, 1], 1: [1, 2]})])
    assert [p.replicas for p in cluster.topics["placed"]] == [[3, 1], [1, 2]]
    _, request = cluster.calls_of("CreateTopics")[0]
    assert request.topics[0].num_partitions == -1 and request.topics[0].replication_factor == -1


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"name": ""}, "non-empty"),
        ({"name": "t", "num_partitions": 0}, "num_partitions must be positive"),
        ({"name": "t", "replication_factor": -3}, "replication_factor"),
        ({"name": "t", "num_partitions": 2, "assignments": {0: [1]}}, "either assignments"),
    ],
)
def test_new_topic_checks_its_shape(kwargs, message):
    with pytest.raises(ValueError, match=message):
        NewTopic(**kwargs)


def test_delete_list_and_describe_topics(cluster, admin):
    cluster.create_topic("a", 2, 2)
    cluster.create_topic("b", 1)
    assert admin.list_topics() == ["a", "b"]
    described = admin.describe_topics(["a"])
    part = described["a"].partitions[1]
    assert (part.partition, part.leader, part.replicas, part.isr) == (1, 2, (2, 3), (2, 3))
    assert sorted(admin.describe_topics()) == ["a", "b"]
    with pytest.raises(UnknownTopicOrPartitionError, match="'zzz' does not exist"):
        admin.describe_topics(["zzz"])["zzz"]
    results = admin.delete_topics(["a", "zzz"], timeout_ms=500)
    assert results["a"] is None and isinstance(results["zzz"], UnknownTopicOrPartitionError)
    assert admin.list_topics() == ["b"]


def test_describe_and_alter_configs(cluster, admin):
    cluster.create_topic("t", 1, configs={"retention.ms": "1000"})
    configs = admin.describe_configs(["t"])["t"]
    assert configs["retention.ms"] == ConfigEntry("retention.ms", "1000", False)
    assert configs["cleanup.policy"] == ConfigEntry("cleanup.policy", "delete", True)
    results = admin.alter_configs(
        {
            "t": ConfigChange(set={"cleanup.policy": "compact"}, delete=["retention.ms"]),
            "nope": ConfigChange(set={"cleanup.policy": "compact"}),
        }
    )
    assert results["t"] is None and isinstance(results["nope"], UnknownTopicOrPartitionError)
    assert cluster.configs["t"] == {"cleanup.policy": "compact"}
    bad = admin.alter_configs({"t": ConfigChange(set={"no.such.config": "1"})})
    assert isinstance(bad["t"], InvalidConfigError)
    with pytest.raises(UnknownTopicOrPartitionError, match="'nope'"):
        admin.describe_configs(["nope"])


def test_describe_cluster(cluster, admin):
    description = admin.describe_cluster()
    assert isinstance(description, ClusterDescription)
    assert description.cluster_id == "fake-cluster-id" and description.controller_id == 1
    assert [(b.node_id, b.address) for b in description.brokers] == [
        (n, cluster.address(n)) for n in (1, 2, 3)
    ]


def test_elect_leaders(cluster, admin):
    cluster.create_topic("t", 2, 2)
    t0, t1 = TopicPartition("t", 0), TopicPartition("t", 1)
    cluster.set_leader(t0, 2)
    results = admin.elect_leaders([t0, t1], timeout_ms=100)
    assert results[t0] is None and isinstance(results[t1], ElectionNotNeededError)
    assert cluster.partition(t0).leader == 1
    _, request = cluster.calls_of("ElectLeaders")[0]
    assert request.timeout_ms == 100
    cluster.fail("ElectLeaders", NotControllerError.code)
    with pytest.raises(NotControllerError):
        admin.elect_leaders(election_type="unclean")
    with pytest.raises(ValueError, match="election_type"):
        admin.elect_leaders(election_type="fastest")


def test_reassignments(cluster, admin):
    cluster.create_topic("t", 1, 1)
    t0 = TopicPartition("t", 0)
    results = admin.alter_partition_reassignments({t0: [2, 3]})
    assert results == {t0: None}
    assert cluster.partition(t0).replicas == [2, 3]
    cancelled = admin.alter_partition_reassignments({t0: None})
    assert isinstance(cancelled[t0], NoReassignmentInProgressError)
    _, request = cluster.calls_of("AlterPartitionReassignments")[1]
    assert request.partitions[0].cancel
    ongoing = admin.list_partition_reassignments()
    assert ongoing == {TopicPartition("moving", 0): OngoingReassignment((1, 2, 3), (3,), (1,))}


def test_delete_records_goes_to_each_leader(cluster, admin):
    cluster.create_topic("t", 2)  # leaders 1 and 2
    t0, t1 = TopicPartition("t", 0), TopicPartition("t", 1)
    for tp in (t0, t1):
        cluster.append(tp, build_batch([Record(None, b"%d" % i) for i in range(5)]))
    cluster.set_leader(t1, 3)  # the admin learns this from a NOT_LEADER_OR_FOLLOWER answer
    results = admin.delete_records({t0: 3, t1: -1, TopicPartition("t", 9): 0})
    assert results[t0] == 3 and results[t1] == 5
    assert isinstance(results[TopicPartition("t", 9)], UnknownTopicOrPartitionError)
    assert cluster.partition(t0).log_start_offset == 3
    beyond = admin.delete_records({t0: 99})
    assert isinstance(beyond[t0], OffsetOutOfRangeError)
    with pytest.raises(ValueError, match="-1"):
        admin.delete_records({t0: -2})


def test_calls_move_on_from_an_unreachable_node(cluster):
    cluster.fail("CreateTopics", status=grpc.StatusCode.UNAVAILABLE)
    with Admin([cluster.address(1), cluster.address(2)]) as admin:
        assert admin.create_topics([NewTopic("t", 1, 1)]) == {"t": None}
    assert [node for node, _ in cluster.calls_of("CreateTopics")] == [1, 2]


def test_no_node_answering_is_a_network_error(cluster):
    cluster.stop()
    with Admin(cluster.bootstrap) as admin, pytest.raises(NetworkError, match="no node answered"):
        admin.list_topics()
