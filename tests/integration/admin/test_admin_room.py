"""The admin room's node-local calls against real nodes: two in-process nodes (each builds its
AdminManager as it serves, ``Node.admin``) on a real ZooKeeper, with a real producer.

describe_cluster, describe_log_dirs, describe_producers and auto_create_topics have no gRPC
call (the Kafka door answers DescribeCluster, DescribeLogDirs, DescribeProducers and Metadata's
auto-creation from them), so the tests call the node's room directly.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from node.admin.admin_manager import AdminManager
from node.admin.requests import ClusterBroker, NewTopicSpec
from node.config import NodeConfig
from node.listeners import Listener
from node.server import Node
from odradek.admin import Admin, NewTopic
from odradek.client.metadata import TopicMetadata
from odradek.producer import Producer
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
