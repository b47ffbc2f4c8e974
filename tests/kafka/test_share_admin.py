"""Share groups' offsets for admins (KIP-932) against a real one-node cluster:
DescribeShareGroupOffsets, AlterShareGroupOffsets and DeleteShareGroupOffsets in raw Kafka
frames, and ``odradek share-groups`` (the SDK's Admin over gRPC) listing, describing and
resetting a group to its earliest offsets, after which confluent-kafka's ``ShareConsumer``
replays the topic. Bad input answers Kafka's codes (GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP,
UNKNOWN_TOPIC_OR_PARTITION) and one-line CLI errors.

One node, where the group's coordinator is the partition's leader and drops its loaded share
partition at once on a reset; and three, where the other leaders drop theirs when the next
member opens a share session.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]
from kio.schema.alter_share_group_offsets.v0.request import (
    AlterShareGroupOffsetsRequest,
    AlterShareGroupOffsetsRequestPartition,
    AlterShareGroupOffsetsRequestTopic,
)
from kio.schema.delete_share_group_offsets.v0.request import (
    DeleteShareGroupOffsetsRequest,
    DeleteShareGroupOffsetsRequestTopic,
)
from kio.schema.describe_share_group_offsets.v1.request import (
    DescribeShareGroupOffsetsRequest,
    DescribeShareGroupOffsetsRequestGroup,
    DescribeShareGroupOffsetsRequestTopic,
)
from kio.schema.types import GroupId, TopicName
from kio.static.primitive import i32, i64

from deploy.local.cluster import LocalCluster
from deploy.local.zookeeper import ZooKeeperServer
from tests.kafka.conftest import call, running_cluster, wait_for
from tests.kafka.test_confluent_kafka import produce, unique
from tests.kafka.test_share_consumer import (
    CLIENT_WAIT_S,
    set_group_configs,
    share_consumer,
    values_of,
)

GROUP_ID_NOT_FOUND = 69
NON_EMPTY_GROUP = 68
UNKNOWN_TOPIC_OR_PARTITION = 3


@pytest.fixture(scope="module")
def share_node(
    tmp_path_factory: pytest.TempPathFactory, zookeeper: ZooKeeperServer
) -> Iterator[LocalCluster]:
    with running_cluster(tmp_path_factory, zookeeper, "share-admin", nodes=1) as cluster:
        yield cluster


def create_topic(bootstrap: str, name: str, partitions: int = 1) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    created = admin.create_topics(
        [NewTopic(name, num_partitions=partitions, replication_factor=1)], operation_timeout=30
    )
    created[name].result(timeout=60)

    def led() -> bool:
        md = admin.list_topics(name, timeout=10).topics[name]
        return md.error is None and all(p.leader >= 0 for p in md.partitions.values())

    wait_for(led, f"{name}'s leaders")


def odradek_cli(grpc: str, *args: str) -> subprocess.CompletedProcess[str]:
    """The CLI against the cluster's gRPC listeners (``grpc``)."""
    return subprocess.run(
        [sys.executable, "-m", "odradek", *args, "--bootstrap-server", grpc],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def rows(result: subprocess.CompletedProcess[str]) -> list[list[str]]:
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    return [line.split() for line in result.stdout.splitlines() if line.strip()]


def one_line_error(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    [line] = result.stderr.strip().splitlines()
    return line


def describe_offsets(address: str, group: str, topic: str | None) -> Any:
    topics = (
        None
        if topic is None
        else (
            DescribeShareGroupOffsetsRequestTopic(
                topic_name=TopicName(topic), partitions=(i32(0),)
            ),
        )
    )
    answer = call(
        address,
        DescribeShareGroupOffsetsRequest(
            groups=(DescribeShareGroupOffsetsRequestGroup(group_id=GroupId(group), topics=topics),)
        ),
    )
    [g] = answer.groups
    return g


def alter_offsets(address: str, group: str, topic: str, offset: int) -> Any:
    return call(
        address,
        AlterShareGroupOffsetsRequest(
            group_id=GroupId(group),
            topics=(
                AlterShareGroupOffsetsRequestTopic(
                    topic_name=TopicName(topic),
                    partitions=(
                        AlterShareGroupOffsetsRequestPartition(
                            partition_index=i32(0), start_offset=i64(offset)
                        ),
                    ),
                ),
            ),
        ),
    )


def read_all(address: str, group: str, topic: str, count: int) -> list[str]:
    """A share consumer reads ``count`` records, keeps polling until its implicit
    acknowledgements (sent with its next ShareFetch) moved the group's start offset past them,
    and leaves."""
    consumer = share_consumer(address, group, topic)
    got: list[str] = []
    try:

        def enough() -> bool | None:
            got.extend(values_of(consumer.poll(0.5)))
            return len(got) >= count or None

        wait_for(enough, f"the share consumer to read {count} records", CLIENT_WAIT_S)

        def acknowledged() -> bool:
            got.extend(values_of(consumer.poll(0.2)))
            g = describe_offsets(address, group, topic)
            return bool(g.topics[0].partitions[0].start_offset == count)

        wait_for(acknowledged, f"{group}'s start offset past the {count} records", CLIENT_WAIT_S)
    finally:
        consumer.close()
    return got


def wait_empty(grpc: str, group: str) -> None:
    def empty() -> bool:
        return (
            rows(odradek_cli(grpc, "share-groups", "list", "--state")).count([group, "Empty"]) == 1
        )

    wait_for(empty, f"share group {group} to be empty", CLIENT_WAIT_S)


def test_reset_to_earliest_replays_the_topic(share_node: LocalCluster) -> None:
    bootstrap = share_node.kafka_bootstrap_servers
    address = share_node.nodes[0].kafka_address
    grpc = share_node.bootstrap_servers
    topic, group = unique("replay"), unique("workers")
    create_topic(bootstrap, topic)
    set_group_configs(bootstrap, group, share_auto_offset_reset="earliest")
    produce(bootstrap, topic, [{"value": f"v{i}".encode()} for i in range(5)])
    assert sorted(read_all(address, group, topic, 5)) == [f"v{i}" for i in range(5)]
    wait_empty(grpc, group)

    # the Kafka door: every record acknowledged, the start offset past them
    g = describe_offsets(address, group, topic)
    assert g.error_code == 0, g
    [t] = g.topics
    [p] = t.partitions
    assert (t.topic_name, p.partition_index, p.start_offset, p.lag, p.error_code) == (
        topic,
        0,
        5,
        0,
        0,
    )
    # topics null: every partition the group has share state for
    assert [x.topic_name for x in describe_offsets(address, group, None).topics] == [topic]

    # the CLI over the SDK
    assert [group] in rows(odradek_cli(grpc, "share-groups", "list"))
    assert rows(odradek_cli(grpc, "share-groups", "describe", group, "--offsets")) == [
        ["GROUP", "TOPIC", "PARTITION", "START-OFFSET", "LAG"],
        [group, topic, "0", "5", "0"],
    ]
    dry = rows(
        odradek_cli(grpc, "share-groups", "reset-offsets", group, "--topic", topic, "--to-earliest")
    )
    assert dry[:2] == [["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"], [group, topic, "0", "0"]]
    assert describe_offsets(address, group, topic).topics[0].partitions[0].start_offset == 5
    done = odradek_cli(
        grpc,
        "share-groups",
        "reset-offsets",
        group,
        "--all-topics",
        "--to-earliest",
        "--execute",
    )
    assert rows(done) == [["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"], [group, topic, "0", "0"]]
    assert rows(odradek_cli(grpc, "share-groups", "describe", group))[1] == [
        group,
        topic,
        "0",
        "0",
        "5",
    ]

    # a new consumer of the group gets every record again
    assert sorted(read_all(address, group, topic, 5)) == [f"v{i}" for i in range(5)]
    wait_empty(grpc, group)

    # delete the group's share state: it has none for the topic any more
    deleted = call(
        address,
        DeleteShareGroupOffsetsRequest(
            group_id=GroupId(group),
            topics=(DeleteShareGroupOffsetsRequestTopic(topic_name=TopicName(topic)),),
        ),
    )
    assert deleted.error_code == 0, deleted
    assert [(r.topic_name, r.error_code) for r in deleted.responses] == [(topic, 0)]
    assert describe_offsets(address, group, topic).topics[0].partitions[0].start_offset == -1
    assert describe_offsets(address, group, None).topics == ()


def test_unknown_and_non_empty_groups_are_refused(share_node: LocalCluster) -> None:
    bootstrap = share_node.kafka_bootstrap_servers
    address = share_node.nodes[0].kafka_address
    grpc = share_node.bootstrap_servers
    topic, group = unique("busy"), unique("busy")
    create_topic(bootstrap, topic)

    # an unknown group
    missing = unique("nobody")
    assert describe_offsets(address, missing, topic).error_code == GROUP_ID_NOT_FOUND
    assert alter_offsets(address, missing, topic, 0).error_code == GROUP_ID_NOT_FOUND
    line = one_line_error(
        odradek_cli(
            grpc, "share-groups", "reset-offsets", missing, "--topic", topic, "--to-earliest"
        )
    )
    assert "GROUP_ID_NOT_FOUND" in line, line
    line = one_line_error(odradek_cli(grpc, "share-groups", "describe", missing))
    assert "GROUP_ID_NOT_FOUND" in line, line

    # a group with a member
    consumer = share_consumer(bootstrap, group, topic)
    try:

        def stable() -> bool:
            consumer.poll(0.2)
            return (
                rows(odradek_cli(grpc, "share-groups", "list", "--state")).count([group, "Stable"])
                == 1
            )

        wait_for(stable, f"share group {group} to have its member", CLIENT_WAIT_S)
        answer = alter_offsets(address, group, topic, 0)
        assert (answer.error_code, answer.responses) == (NON_EMPTY_GROUP, ()), answer
        deleted = call(
            address,
            DeleteShareGroupOffsetsRequest(
                group_id=GroupId(group),
                topics=(DeleteShareGroupOffsetsRequestTopic(topic_name=TopicName(topic)),),
            ),
        )
        assert deleted.error_code == NON_EMPTY_GROUP, deleted
        members = rows(odradek_cli(grpc, "share-groups", "describe", group, "--members"))
        assert members[0][:5] == ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS"]
        assert len(members) == 2 and members[1][4] == "1", members
        line = one_line_error(
            odradek_cli(
                grpc,
                "share-groups",
                "reset-offsets",
                group,
                "--topic",
                topic,
                "--to-earliest",
                "--execute",
            )
        )
        assert "not empty" in line, line
        # an unknown partition of a described topic
        g = describe_offsets(address, group, unique("nosuch"))
        assert [p.error_code for t in g.topics for p in t.partitions] == [
            UNKNOWN_TOPIC_OR_PARTITION
        ]
    finally:
        consumer.close()


@pytest.fixture(scope="module")
def share_nodes(
    tmp_path_factory: pytest.TempPathFactory, zookeeper: ZooKeeperServer
) -> Iterator[LocalCluster]:
    with running_cluster(tmp_path_factory, zookeeper, "share-admin-3", nodes=3) as cluster:
        yield cluster


def test_a_reset_reaches_the_leaders_that_are_not_the_coordinator(
    share_nodes: LocalCluster,
) -> None:
    """Three partitions on three nodes: at least two are led by a node other than the group's
    coordinator, whose loaded share partitions must learn of the reset (a new share session
    finds the durable state epoch moved on)."""
    bootstrap = share_nodes.kafka_bootstrap_servers
    grpc = share_nodes.bootstrap_servers
    topic, group = unique("spread"), unique("spread")
    create_topic(bootstrap, topic, partitions=3)
    set_group_configs(bootstrap, group, share_auto_offset_reset="earliest")
    values = [f"s{i}" for i in range(12)]
    produce(
        bootstrap, topic, [{"value": v.encode(), "partition": i % 3} for i, v in enumerate(values)]
    )

    def read(what: str) -> list[str]:
        consumer = share_consumer(bootstrap, group, topic)
        got: list[str] = []
        try:

            def done() -> bool:
                got.extend(values_of(consumer.poll(0.3)))
                described = rows(odradek_cli(grpc, "share-groups", "describe", group))
                starts = [r[3] for r in described[1:]]
                return len(got) >= len(values) and starts == ["4", "4", "4"]

            wait_for(done, what, CLIENT_WAIT_S)
        finally:
            consumer.close()
        return got

    assert sorted(read("the 12 records read and acknowledged")) == sorted(values)
    wait_empty(grpc, group)
    reset = odradek_cli(
        grpc, "share-groups", "reset-offsets", group, "--topic", topic, "--to-earliest", "--execute"
    )
    assert [r[3] for r in rows(reset)[1:]] == ["0", "0", "0"]
    # every partition's lag, whichever node leads it (the coordinator knows only its own)
    described = rows(odradek_cli(grpc, "share-groups", "describe", group))
    assert [(r[3], r[4]) for r in described[1:]] == [("0", "4")] * 3
    assert sorted(read("the 12 records replayed after the reset")) == sorted(values)
