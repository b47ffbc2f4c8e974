"""Share groups (KIP-932) membership on the Kafka door against a real three-node cluster:
raw ShareGroupHeartbeat / ShareGroupDescribe frames (Kafka's error codes on bad input),
ListGroups' ``share`` type, DescribeGroups and DeleteGroups of a share group, a group id used
by one kind refused to the other, and confluent-kafka's ``ShareConsumer`` (librdkafka 2.16)
joining through its own heartbeats. Reading records (ShareFetch) is not served here yet."""

from __future__ import annotations

import datetime
import uuid
from typing import Any

import pytest
from confluent_kafka import ShareConsumer
from kio.schema.delete_groups.v1.request import DeleteGroupsRequest
from kio.schema.describe_groups.v4.request import DescribeGroupsRequest
from kio.schema.find_coordinator.v2.request import FindCoordinatorRequest
from kio.schema.join_group.v5.request import JoinGroupRequest, JoinGroupRequestProtocol
from kio.schema.list_groups.v5.request import ListGroupsRequest
from kio.schema.share_group_describe.v1.request import ShareGroupDescribeRequest
from kio.schema.share_group_heartbeat.v1.request import ShareGroupHeartbeatRequest
from kio.schema.types import GroupId, TopicName
from kio.static.primitive import i8, i32, i32Timedelta

from deploy.local.cluster import LocalCluster
from deploy.local.zookeeper import ZooKeeperServer
from tests.kafka.conftest import call, running_cluster, wait_for
from tests.kafka.test_confluent_kafka import create_topic, unique
from tests.kafka.test_group_apis import coordinator_of, heartbeat, known_to

CLIENT_WAIT_S = 180.0
"""How long a wait on librdkafka's share consumer may take: its heartbeats come every 5 s, and
until ShareFetch is served each of its fetches costs it a connection (the door closes it on an
API it does not serve), heartbeats in flight on it included; on a loaded machine that adds up.
A deadline, not a timing assertion."""

NONE = 0
INCONSISTENT_GROUP_PROTOCOL = 23
UNKNOWN_MEMBER_ID = 25
INVALID_REQUEST = 42
NON_EMPTY_GROUP = 68
GROUP_ID_NOT_FOUND = 69
FENCED_MEMBER_EPOCH = 110


def share_heartbeat(
    address: str, group: str, member: str, epoch: int, topics: tuple[str, ...] | None = None
) -> Any:
    return call(
        address,
        ShareGroupHeartbeatRequest(
            group_id=GroupId(group),
            member_id=member,
            member_epoch=i32(epoch),
            subscribed_topic_names=None if topics is None else tuple(map(TopicName, topics)),
        ),
    )


def share_describe(address: str, group: str) -> Any:
    answer = call(
        address,
        ShareGroupDescribeRequest(group_ids=(GroupId(group),), include_authorized_operations=False),
    )
    (described,) = answer.groups
    return described


def partitions(answer: Any) -> set[int]:
    assert answer.assignment is not None, answer
    return {int(p) for tp in answer.assignment.topic_partitions for p in tp.partitions}


def test_members_share_a_partition_and_bad_input_gets_kafkas_errors(
    kafka_cluster: LocalCluster, bootstrap: str
) -> None:
    topic, group = unique("share"), unique("sg")
    create_topic(bootstrap, topic, partitions=1)
    address = coordinator_of(kafka_cluster, group)
    known_to(address, topic, 1)
    a, b = uuid.uuid4().hex, uuid.uuid4().hex

    joined_a = share_heartbeat(address, group, a, 0, (topic,))
    assert int(joined_a.error_code) == NONE, joined_a
    assert joined_a.member_id == a
    assert int(joined_a.member_epoch) == 1
    assert int(joined_a.heartbeat_interval / datetime.timedelta(milliseconds=1)) == 5000
    assert partitions(joined_a) == {0}
    # a second member on a one-partition topic shares partition 0 (a consumer group would
    # leave it idle)
    joined_b = share_heartbeat(address, group, b, 0, (topic,))
    assert int(joined_b.error_code) == NONE, joined_b
    assert int(joined_b.member_epoch) == 2
    assert partitions(joined_b) == {0}
    again = share_heartbeat(address, group, a, 1)
    assert (int(again.error_code), int(again.member_epoch)) == (NONE, 2)

    described = share_describe(address, group)
    assert int(described.error_code) == NONE, described
    assert (described.group_state, described.assignor_name) == ("Stable", "simple")
    assert (int(described.group_epoch), int(described.assignment_epoch)) == (2, 2)
    members = {m.member_id: m for m in described.members}
    assert set(members) == {a, b}
    for m in members.values():
        assert tuple(m.subscribed_topic_names) == (topic,)
        (tp,) = m.assignment.topic_partitions
        assert (tp.topic_name, tuple(tp.partitions)) == (topic, (0,))
        assert m.client_host.startswith("/")

    # bad input, with Kafka's codes
    assert int(share_heartbeat(address, group, "nobody", 2).error_code) == UNKNOWN_MEMBER_ID
    assert int(share_heartbeat(address, group, a, 7).error_code) == FENCED_MEMBER_EPOCH
    assert int(share_heartbeat(address, group, a, 1).error_code) == FENCED_MEMBER_EPOCH
    assert int(share_heartbeat(address, group, a, 0).error_code) == INVALID_REQUEST  # no topics
    assert int(share_heartbeat(address, group, "", 0, (topic,)).error_code) == INVALID_REQUEST
    assert int(share_heartbeat(address, group, a, -2).error_code) == INVALID_REQUEST
    missing = unique("nosuch")
    assert int(
        share_heartbeat(coordinator_of(kafka_cluster, missing), missing, a, 3).error_code
    ) == (GROUP_ID_NOT_FOUND)

    # ListGroups v5 with the share type; DescribeGroups (the classic protocol's) says Dead
    listed = call(address, ListGroupsRequest(states_filter=(), types_filter=("share",)))
    mine = [g for g in listed.groups if g.group_id == group]
    assert [(g.group_state, g.group_type, g.protocol_type) for g in mine] == [
        ("Stable", "share", "share")
    ]
    consumers_only = call(address, ListGroupsRequest(states_filter=(), types_filter=("consumer",)))
    assert group not in {g.group_id for g in consumers_only.groups}
    (classic_view,) = call(
        address,
        DescribeGroupsRequest(groups=(GroupId(group),), include_authorized_operations=False),
    ).groups
    assert classic_view.group_state == "Dead"

    # the group id is a share group's: the other protocols are refused as Kafka refuses them
    assert int(heartbeat(address, group, uuid.uuid4().hex, 0, topic).error_code) == (
        GROUP_ID_NOT_FOUND
    )
    join = call(
        address,
        JoinGroupRequest(
            group_id=GroupId(group),
            session_timeout=i32Timedelta.parse(datetime.timedelta(seconds=10)),
            rebalance_timeout=i32Timedelta.parse(datetime.timedelta(seconds=10)),
            member_id="",
            group_instance_id=None,
            protocol_type="consumer",
            protocols=(JoinGroupRequestProtocol(name="range", metadata=b""),),
        ),
    )
    assert int(join.error_code) == INCONSISTENT_GROUP_PROTOCOL

    # DeleteGroups: refused while members remain, then deleted once they left
    (refused,) = call(address, DeleteGroupsRequest(groups_names=(GroupId(group),))).results
    assert int(refused.error_code) == NON_EMPTY_GROUP
    left = share_heartbeat(address, group, a, 2)
    assert int(left.error_code) == NONE
    for member, epoch in ((a, 2), (b, 2)):
        gone = share_heartbeat(address, group, member, -1)
        assert (int(gone.error_code), int(gone.member_epoch)) == (NONE, -1), (member, epoch)
    empty = share_describe(address, group)
    assert (empty.group_state, tuple(empty.members)) == ("Empty", ())
    (deleted,) = call(address, DeleteGroupsRequest(groups_names=(GroupId(group),))).results
    assert int(deleted.error_code) == NONE
    assert int(share_describe(address, group).error_code) == GROUP_ID_NOT_FOUND


def test_a_consumer_groups_id_is_not_a_share_group(
    kafka_cluster: LocalCluster, bootstrap: str
) -> None:
    topic, group = unique("share"), unique("cg")
    create_topic(bootstrap, topic, partitions=1)
    address = coordinator_of(kafka_cluster, group)
    known_to(address, topic, 1)
    assert int(heartbeat(address, group, uuid.uuid4().hex, 0, topic).error_code) == NONE
    refused = share_heartbeat(address, group, uuid.uuid4().hex, 0, (topic,))
    assert int(refused.error_code) == GROUP_ID_NOT_FOUND
    assert "not a share group" in (refused.error_message or "")
    assert int(share_describe(address, group).error_code) == GROUP_ID_NOT_FOUND


def test_confluent_share_consumers_join_through_their_heartbeats(
    kafka_cluster: LocalCluster, bootstrap: str
) -> None:
    topic, group = unique("share"), unique("sgc")
    create_topic(bootstrap, topic, partitions=2)
    address = coordinator_of(kafka_cluster, group)
    known_to(address, topic, 2)
    consumers = [
        ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group}) for _ in range(3)
    ]
    try:
        for c in consumers:
            c.subscribe([topic])

        def all_assigned() -> Any:
            for c in consumers:
                c.poll(0.05)
            described = share_describe(address, group)
            if int(described.error_code) != NONE or len(described.members) != 3:
                return None
            epoch = int(described.assignment_epoch)
            if not all(int(m.member_epoch) == epoch for m in described.members):
                return None  # a member has not heartbeated since the last join yet
            return described

        described = wait_for(
            all_assigned, "three share consumers in the group at its epoch", CLIENT_WAIT_S
        )
        assert described.group_state == "Stable"
        # three members, two partitions: every partition read, one of them by two members
        assigned = [
            {(tp.topic_name, int(p)) for tp in m.assignment.topic_partitions for p in tp.partitions}
            for m in described.members
        ]
        assert set().union(*assigned) == {(topic, 0), (topic, 1)}
        assert sorted(map(len, assigned)) == [1, 1, 2]
        assert all(m.client_id for m in described.members)
        # (confluent-kafka 2.16's AdminClient has no share group type to list or describe
        # with: librdkafka's ListGroups asks for consumer and classic groups only)
    finally:
        for c in consumers:
            c.close()

    # close() leaves the group (epoch -1): the group is empty, then deletable
    wait_for(
        lambda: share_describe(address, group).group_state == "Empty",
        "the consumers left",
        CLIENT_WAIT_S,
    )
    (deleted,) = call(address, DeleteGroupsRequest(groups_names=(GroupId(group),))).results
    assert int(deleted.error_code) == NONE


def test_members_rejoin_after_a_coordinator_failover(
    tmp_path_factory: pytest.TempPathFactory, zookeeper: ZooKeeperServer
) -> None:
    """Only the group's epoch is written: the next coordinator has the group, empty, at its
    epoch; a member's heartbeat there answers UNKNOWN_MEMBER_ID, and librdkafka's share
    consumer rejoins by itself (epoch 0) and is assigned again."""
    with running_cluster(
        tmp_path_factory, zookeeper, "share-failover", overrides={"num.partitions": "1"}
    ) as cluster:
        bootstrap = cluster.kafka_bootstrap_servers
        topic, group = unique("share"), unique("sgf")
        create_topic(bootstrap, topic, partitions=1)
        address = coordinator_of(cluster, group)
        known_to(address, topic, 1)
        raw = uuid.uuid4().hex
        assert int(share_heartbeat(address, group, raw, 0, (topic,)).error_code) == NONE
        consumer = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group})
        try:
            consumer.subscribe([topic])

            def joined(at: str, before: int) -> Any:
                consumer.poll(0.05)
                described = share_describe(at, group)
                if int(described.error_code) != NONE or int(described.group_epoch) <= before:
                    return None
                others = [m for m in described.members if m.member_id != raw]
                ready = others and all(m.assignment.topic_partitions for m in others)
                return described if ready else None

            first = wait_for(
                lambda: joined(address, 1), "the share consumer in the group", CLIENT_WAIT_S
            )
            epoch = int(first.group_epoch)
            (old,) = (n for n in cluster.nodes if n.kafka_address == address)
            old.stop()

            def moved() -> str | None:
                live = next(n for n in cluster.nodes if n.running)
                found = call(live.kafka_address, FindCoordinatorRequest(key=group, key_type=i8(0)))
                at = f"{found.host}:{found.port}"
                if int(found.error_code) != NONE or at == address:
                    return None
                described = share_describe(at, group)
                return at if int(described.error_code) == NONE else None

            new = wait_for(moved, "the group loaded by the next coordinator", CLIENT_WAIT_S)
            # the raw member never heartbeats again: unknown to the new coordinator
            gone = share_heartbeat(new, group, raw, epoch)
            assert int(gone.error_code) == UNKNOWN_MEMBER_ID
            # the share consumer's next heartbeat is refused alike, and it rejoins: at an epoch
            # above the old coordinator's (the persisted epoch; a group rebuilt from nothing
            # would start again at 1)
            again = wait_for(
                lambda: joined(new, epoch), "the share consumer rejoined", CLIENT_WAIT_S
            )
            assert raw not in {m.member_id for m in again.members}
        finally:
            consumer.close()
