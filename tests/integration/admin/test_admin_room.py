"""The admin room's node-local calls against real nodes: two in-process nodes (each builds its
AdminManager as it serves, ``Node.admin``) on a real ZooKeeper, with a real producer.

describe_cluster, describe_log_dirs, describe_producers and auto_create_topics have no gRPC
call (the Kafka door answers DescribeCluster, DescribeLogDirs, DescribeProducers and Metadata's
auto-creation from them), so the tests call the node's room directly.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import grpc
import pytest

from node.admin.admin_manager import AdminManager
from node.admin.requests import (
    AlterConfigOp,
    AlterConfigOpType,
    AlterConfigsResource,
    ClusterBroker,
    ConfigResource,
    ConfigResourceType,
    ConfigSource,
    CreatePartitionsTopic,
    DescribeConfigsResource,
    DescribedConfig,
    ElectionType,
    IncrementalAlterConfigsResource,
    NewTopicSpec,
    ReassignablePartition,
)
from node.config import NodeConfig
from node.listeners import Listener
from node.server import Node
from odradek.admin import Admin, NewTopic
from odradek.client.metadata import TopicMetadata
from odradek.producer import Producer
from odradek.v1 import odradek_pb2 as pb
from odradek.v1 import odradek_pb2_grpc as pb_grpc
from tests.integration.helpers import wait_for

PROTOCOLS = (("PLAINTEXT", "PLAINTEXT"), ("EXTERNAL", "PLAINTEXT"))


def _config(tmp_path: Path, zk_connect: str, node_id: int) -> NodeConfig:
    return NodeConfig(
        node_id=node_id,
        log_dirs=(tmp_path / f"n{node_id}-a", tmp_path / f"n{node_id}-b"),
        zookeeper_connect=zk_connect,
        rack=f"r{node_id}",
        listeners=(Listener("PLAINTEXT", "127.0.0.1", 0), Listener("EXTERNAL", "127.0.0.1", 0)),
        listener_security_protocol_map=PROTOCOLS,
        inter_broker_listener_name="PLAINTEXT",
        num_partitions=3,
        default_replication_factor=2,
        zookeeper_session_timeout_ms=6_000,
    )


@pytest.fixture
def nodes(tmp_path: Path, zk_connect: str) -> Iterator[tuple[Node, Node]]:
    started: list[Node] = []
    try:
        for node_id in (0, 1):
            node = Node(_config(tmp_path, zk_connect, node_id))
            started.append(node)
            node.start()
        zero, one = started
        for node in started:
            wait_for(_knows_both(node), "both live")
        yield zero, one
    finally:
        for node in reversed(started):
            node.stop(controlled=False)


def _knows_both(node: Node) -> Callable[[], bool]:
    return lambda: len(node.metadata.live_broker_ids()) == 2


def _admin(node: Node) -> AdminManager:
    assert node.admin is not None
    return node.admin


def _bootstrap(node: Node) -> str:
    return f"127.0.0.1:{node.ports['PLAINTEXT']}"


def test_describe_cluster_answers_each_listener_with_its_endpoints(nodes):
    zero, one = nodes
    plain = _admin(zero).describe_cluster("PLAINTEXT")
    assert plain.error_code == 0 and plain.cluster_id
    assert plain.controller_id in (0, 1)
    assert plain.brokers == (
        ClusterBroker(0, "127.0.0.1", zero.ports["PLAINTEXT"], "r0"),
        ClusterBroker(1, "127.0.0.1", one.ports["PLAINTEXT"], "r1"),
    )
    external = _admin(one).describe_cluster("EXTERNAL")
    assert [(b.broker_id, b.port) for b in external.brokers] == [
        (0, zero.ports["EXTERNAL"]),
        (1, one.ports["EXTERNAL"]),
    ]
    assert external.cluster_id == plain.cluster_id
    assert external.controller_id == plain.controller_id
    # a listener no broker has: nobody to answer with
    assert _admin(zero).describe_cluster("NOPE").brokers == ()


def test_describe_log_dirs_gives_each_directory_and_partition_sizes(nodes):
    zero, _one = nodes
    with Admin(_bootstrap(zero)) as admin:
        assert admin.create_topics([NewTopic("sized", assignments={0: [0], 1: [0]})]) == {
            "sized": None
        }
        with Producer(_bootstrap(zero)) as producer:
            for i in range(20):
                producer.send("sized", b"x" * 100, partition=i % 2)
            producer.flush()

    def sizes() -> dict[tuple[str, int], int]:
        result = _admin(zero).describe_log_dirs()
        assert result.error_code == 0
        return {
            (t.name, p.partition_index): p.partition_size
            for d in result.results
            for t in d.topics
            for p in t.partitions
        }

    def with_data() -> bool:
        s = sizes()
        return all(s.get(("sized", p)) for p in (0, 1))

    wait_for(with_data, "both partitions with data")
    found = sizes()
    result = _admin(zero).describe_log_dirs()
    assert sorted(d.log_dir for d in result.results) == sorted(
        str(d.resolve()) for d in zero.config.log_dirs
    )
    for d in result.results:
        assert d.error_code == 0 and d.total_bytes > 0 and 0 <= d.usable_bytes <= d.total_bytes
        for t in d.topics:
            for p in t.partitions:
                assert (p.offset_lag, p.is_future_key) == (0, False)
    # the two partitions went to the two directories, each log in one of them
    homes = {
        (t.name, p.partition_index): d.log_dir
        for d in result.results
        for t in d.topics
        for p in t.partitions
    }
    assert homes[("sized", 0)] != homes[("sized", 1)]
    assert found[("sized", 0)] > 20 * 50
    only = _admin(zero).describe_log_dirs([("sized", 1), ("absent", 0)])
    assert len(only.results) == 2  # every directory is listed, with what is asked of it
    assert [
        (t.name, [p.partition_index for p in t.partitions]) for d in only.results for t in d.topics
    ] == [("sized", [1])]


def test_describe_producers_reads_the_replicas_producer_state(nodes):
    zero, one = nodes
    with Admin(_bootstrap(zero)) as admin:
        assert admin.create_topics([NewTopic("idem", assignments={0: [0], 1: [1]})]) == {
            "idem": None
        }
        with Producer(_bootstrap(zero), linger_ms=0) as producer:
            for _ in range(5):
                producer.send("idem", b"v", partition=0).result(timeout=30)
    wait_for(lambda: ("idem", 1) in zero.metadata.snapshot.partitions, "node 0 to know idem-1")
    results = _admin(zero).describe_producers(
        [("idem", 0), ("idem", 1), ("idem", 7), ("absent", 0), ("bad name", 0)]
    )
    codes = [(r.topic, r.partition_index, r.error_code) for r in results]
    assert codes == [
        ("idem", 0, 0),
        ("idem", 1, 6),  # NOT_LEADER_OR_FOLLOWER: node 0 hosts no replica of it
        ("idem", 7, 3),  # UNKNOWN_TOPIC_OR_PARTITION
        ("absent", 0, 3),
        ("bad name", 0, 17),  # INVALID_TOPIC_EXCEPTION
    ]
    [state] = results[0].active_producers
    assert state.producer_id >= 0 and state.producer_epoch == 0
    assert state.last_sequence == 4 and state.last_timestamp > 0
    assert (state.coordinator_epoch, state.current_txn_start_offset) == (-1, -1)
    # node 1 hosts idem-1, which no producer has written
    [on_one] = _admin(one).describe_producers([("idem", 1)])
    assert (on_one.error_code, on_one.active_producers) == (0, ())


def test_auto_create_topics_creates_with_the_node_defaults(nodes):
    zero, _one = nodes
    admin = _admin(zero)
    first = admin.auto_create_topics(["auto-a", "bad name", "auto-a", "auto-b"])
    # LEADER_NOT_AVAILABLE for a topic created (its leaders are not known yet), 17 for a bad name
    assert first == {"auto-a": 5, "bad name": 17, "auto-b": 5}
    # already there: LEADER_NOT_AVAILABLE again, as Kafka answers TOPIC_ALREADY_EXISTS
    assert admin.auto_create_topics(["auto-a"]) == {"auto-a": 5}
    # the offsets topic is the group coordinator's to create, with its own settings
    assert admin.auto_create_topics(["__consumer_offsets"]) == {"__consumer_offsets": 3}
    with Admin(_bootstrap(zero)) as client:

        def auto_a() -> TopicMetadata | None:
            d = client.describe_topics(["auto-a"])["auto-a"]
            return d if d.partitions else None

        described = wait_for(auto_a, "auto-a to be described")
        # num.partitions=3, default.replication.factor=2
        assert len(described.partitions) == 3
        assert all(len(p.replicas) == 2 for p in described.partitions)
    assert zero.zk is not None
    assert zero.zk.exists("/brokers/topics/__consumer_offsets") is None
    # a replication factor the cluster cannot give passes its error through
    greedy = AdminManager(zero.zk, zero.clock, default_replication_factor=3)
    assert greedy.auto_create_topics(["auto-c"]) == {"auto-c": 38}  # INVALID_REPLICATION_FACTOR
    # Kafka's refusal of KRaft's metadata log, in either mode
    [refused] = admin.create_topics([NewTopicSpec("__cluster_metadata")])
    assert (refused.error_code, refused.error_message) == (
        42,
        "Creation of internal topic __cluster_metadata is prohibited.",
    )


def test_configs_incremental_and_legacy_on_topics_and_read_only_brokers(nodes):
    zero, one = nodes
    admin = _admin(zero)
    [created] = admin.create_topics(
        [NewTopicSpec("conf", assignments=((0, (0,)),), configs={"retention.ms": "60000"})]
    )
    assert created.error_code == 0 and created.topic_id
    assert (created.num_partitions, created.replication_factor) == (1, 1)
    assert {c.name: c.value for c in created.configs}["retention.ms"] == "60000"
    topic = ConfigResource(ConfigResourceType.TOPIC, "conf")

    def described(*keys: str) -> dict[str, DescribedConfig]:
        [result] = admin.describe_configs(
            [DescribeConfigsResource(topic, keys or None)], include_synonyms=True
        )
        assert result.error_code == 0, result.error_message
        return {c.name: c for c in result.configs}

    append = AlterConfigOp("cleanup.policy", AlterConfigOpType.APPEND, "compact")
    [done] = admin.incremental_alter_configs([IncrementalAlterConfigsResource(topic, (append,))])
    assert done.error_code == 0, done.error_message
    policy = described("cleanup.policy")["cleanup.policy"]
    assert (policy.value, policy.config_source) == (
        "delete,compact",
        ConfigSource.DYNAMIC_TOPIC_CONFIG,
    )
    assert [s.source for s in policy.synonyms] == [
        ConfigSource.DYNAMIC_TOPIC_CONFIG,
        ConfigSource.DEFAULT_CONFIG,
    ]
    assert described()["retention.ms"].value == "60000"
    # one bad operation fails the resource as a whole, and nothing is written
    ops = (
        AlterConfigOp("retention.ms", AlterConfigOpType.SET, "1"),
        AlterConfigOp("retention.ms", AlterConfigOpType.APPEND, "2"),
    )
    [dup] = admin.incremental_alter_configs([IncrementalAlterConfigsResource(topic, ops)])
    assert dup.error_code == 42  # INVALID_REQUEST: a config named twice
    listed = AlterConfigOp("retention.ms", AlterConfigOpType.APPEND, "2")
    [bad] = admin.incremental_alter_configs([IncrementalAlterConfigsResource(topic, (listed,))])
    assert bad.error_code == 40  # INVALID_CONFIG: retention.ms is no list
    assert described("retention.ms")["retention.ms"].value == "60000"
    # the legacy call replaces every override: retention.ms and cleanup.policy go back
    [legacy] = admin.alter_configs([AlterConfigsResource(topic, {"segment.bytes": "1048576"})])
    assert legacy.error_code == 0
    after = described("retention.ms", "cleanup.policy", "segment.bytes")
    assert after["segment.bytes"].config_source is ConfigSource.DYNAMIC_TOPIC_CONFIG
    assert after["retention.ms"].config_source is ConfigSource.DEFAULT_CONFIG
    assert after["cleanup.policy"].value == "delete"
    # the other node reads the same overrides from ZooKeeper
    [seen] = _admin(one).describe_configs([DescribeConfigsResource(topic, ("segment.bytes",))])
    assert [c.value for c in seen.configs] == ["1048576"]
    # brokers: this node's defaults, read-only; another node's id is INVALID_REQUEST
    mine, other, missing = admin.describe_configs(
        [
            DescribeConfigsResource(ConfigResource(ConfigResourceType.BROKER, "0")),
            DescribeConfigsResource(ConfigResource(ConfigResourceType.BROKER, "1")),
            DescribeConfigsResource(ConfigResource(ConfigResourceType.TOPIC, "absent")),
        ]
    )
    entries = {c.name: c for c in mine.configs}
    assert entries["num.partitions"].value == "3" and entries["num.partitions"].read_only
    assert entries["log.roll.ms"].config_source is ConfigSource.DEFAULT_CONFIG
    assert (other.error_code, missing.error_code) == (42, 3)
    broker = ConfigResource(ConfigResourceType.BROKER, "0")
    [refused] = admin.alter_configs([AlterConfigsResource(broker, {"num.partitions": "5"})])
    assert refused.error_code == 42


@pytest.mark.parametrize("name", ["", ".", "..", "../x", "a/b", "a b"])
def test_a_name_that_cannot_be_a_topic_gets_kafkas_typed_errors(nodes, name):
    # such a name never becomes part of a znode path (ZooKeeper would refuse it: an untyped
    # failure, UNKNOWN_SERVER_ERROR on the wire); Kafka validates it (Topic.validate) where
    # it configures a topic, and finds no topic of that name elsewhere
    admin = _admin(nodes[0])
    resource = ConfigResource(ConfigResourceType.TOPIC, name)
    [described] = admin.describe_configs([DescribeConfigsResource(resource, None)])
    assert described.error_code == 17  # INVALID_TOPIC_EXCEPTION
    [altered] = admin.alter_configs([AlterConfigsResource(resource, {"retention.ms": "1"})])
    expected = 42 if name == "" else 17  # "": the default topic resource, INVALID_REQUEST
    assert altered.error_code == expected
    set_retention = AlterConfigOp("retention.ms", AlterConfigOpType.SET, "1")
    [incremental] = admin.incremental_alter_configs(
        [IncrementalAlterConfigsResource(resource, (set_retention,))]
    )
    assert incremental.error_code == expected
    assert [r.error_code for r in admin.delete_topics([name])] == [3]
    [grown] = admin.create_partitions([CreatePartitionsTopic(name, 2)])
    assert grown.error_code == 3
    elected = admin.elect_leaders(ElectionType.PREFERRED, [(name, 0)])
    assert [p.error_code for p in elected.partitions] == [3]
    moved = admin.alter_partition_reassignments([ReassignablePartition(name, 0, (0,))])
    assert [p.error_code for p in moved.partitions] == [3]
    assert admin.list_partition_reassignments([(name, 0)]).reassignments == ()


def test_grpc_alters_and_describes_broker_and_group_configs_and_every_node_applies_them(nodes):
    # the gRPC door's AlterConfigs `resources` and DescribeConfigs' GROUP resource; a dynamic
    # cluster-wide default reaches the other node's topic defaults through ZooKeeper
    zero, one = nodes
    default = pb.ConfigResource(type=pb.CONFIG_RESOURCE_BROKER, name="")
    group = pb.ConfigResource(type=pb.CONFIG_RESOURCE_GROUP, name="g1")
    with grpc.insecure_channel(_bootstrap(zero)) as channel:
        stub = pb_grpc.AdminStub(channel)
        answer = stub.AlterConfigs(
            pb.AlterConfigsRequest(
                resources=[
                    pb.AlterableResourceConfig(
                        resource=default, set={"log.retention.bytes": "123456"}
                    ),
                    pb.AlterableResourceConfig(
                        resource=group, set={"consumer.heartbeat.interval.ms": "6000"}
                    ),
                    pb.AlterableResourceConfig(resource=group, set={"log.dirs": "/x"}),
                ]
            )
        )
        assert [(r.resource.name, r.error_code) for r in answer.resources] == [
            ("", 0),
            ("g1", 42),  # named twice: both refused, as Kafka
            ("g1", 42),
        ]
        answer = stub.AlterConfigs(
            pb.AlterConfigsRequest(
                resources=[
                    pb.AlterableResourceConfig(
                        resource=group, set={"consumer.heartbeat.interval.ms": "6000"}
                    )
                ]
            )
        )
        assert [r.error_code for r in answer.resources] == [0]
        described = stub.DescribeConfigs(pb.DescribeConfigsRequest(resources=[group]))
        (result,) = described.resources
        entries = {e.name: e for e in result.entries}
        interval = entries["consumer.heartbeat.interval.ms"]
        assert (interval.value, interval.source) == ("6000", pb.GROUP_CONFIG)
    wait_for(
        lambda: one.dynamic_config.log.retention_bytes == 123456, "node 1 to apply the default"
    )
    wait_for(
        lambda: one.group_configs.group_config("g1").consumer_heartbeat_interval_ms == 6000,
        "node 1 to know the group's config",
    )


def test_broker_and_group_config_operations_validate_only_and_the_legacy_replace(nodes):
    zero, _ = nodes
    admin = _admin(zero)
    default = ConfigResource(ConfigResourceType.BROKER, "")
    group = ConfigResource(ConfigResourceType.GROUP, "g2")

    def current(resource: ConfigResource) -> dict[str, str]:
        [result] = admin.describe_configs([DescribeConfigsResource(resource)])
        assert result.error_code == 0, result.error_message
        return {
            c.name: c.value or ""
            for c in result.configs
            if c.config_source
            in (ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG, ConfigSource.GROUP_CONFIG)
        }

    append = AlterConfigOp("log.cleanup.policy", AlterConfigOpType.APPEND, "compact")
    [checked] = admin.incremental_alter_configs(
        [IncrementalAlterConfigsResource(default, (append,))], validate_only=True
    )
    assert checked.error_code == 0 and current(default) == {}  # validated, not written
    [done] = admin.incremental_alter_configs([IncrementalAlterConfigsResource(default, (append,))])
    assert done.error_code == 0
    assert current(default) == {"log.cleanup.policy": "delete,compact"}  # from the default
    # a new topic's CreateTopics answer shows the dynamic default it inherits
    [created] = admin.create_topics([NewTopicSpec("inherits", assignments=((0, (0,)),))])
    policy = {c.name: c for c in created.configs}["cleanup.policy"]
    assert (policy.value, policy.config_source) == (
        "delete,compact",
        ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG,
    )
    [wrong] = admin.incremental_alter_configs(
        [
            IncrementalAlterConfigsResource(
                default, (AlterConfigOp("log.retention.ms", AlterConfigOpType.APPEND, "1"),)
            )
        ]
    )
    assert (wrong.error_code, wrong.error_message) == (
        42,
        "Config value append is not allowed for config key: log.retention.ms",
    )
    # legacy AlterConfigs replaces a resource's whole set
    [first] = admin.alter_configs(
        [AlterConfigsResource(group, {"consumer.heartbeat.interval.ms": "6000"})]
    )
    [second] = admin.alter_configs(
        [AlterConfigsResource(group, {"consumer.session.timeout.ms": "50000"})]
    )
    assert (first.error_code, second.error_code) == (0, 0)
    assert current(group) == {"consumer.session.timeout.ms": "50000"}
    [empty] = admin.describe_configs(
        [DescribeConfigsResource(ConfigResource(ConfigResourceType.GROUP, ""))]
    )
    assert (empty.error_code, empty.error_message) == (42, "Group name must not be empty")
    [other] = admin.incremental_alter_configs(
        [
            IncrementalAlterConfigsResource(
                ConfigResource(ConfigResourceType.BROKER, "1"),
                (AlterConfigOp("log.retention.ms", AlterConfigOpType.SET, "1"),),
            )
        ]
    )
    assert (other.error_code, other.error_message) == (
        42,
        "Unexpected broker id, expected 0, but received 1",
    )
