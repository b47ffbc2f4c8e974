"""Consumer groups on the Kafka door, over odradek's KIP-848 group coordinator, with Kafka
clients none of us wrote against a real three-node cluster: confluent-kafka with
``group.protocol=consumer`` (KIP-848 over the wire: ConsumerGroupHeartbeat, OffsetCommit v9,
OffsetFetch v9, Metadata v12 for the topic ids), its AdminClient (ListGroups,
ConsumerGroupDescribe, DescribeGroups, DeleteGroups, OffsetFetch, OffsetCommit, OffsetDelete),
simple consumers of confluent-kafka and kafka-python (``assign`` and commits with no
generation), kafka-python's KafkaAdminClient, an odradek SDK member (gRPC) sharing a group with
a librdkafka member, and raw requests for Kafka's error codes on bad input."""

from __future__ import annotations

import importlib
import uuid
import warnings
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import pytest
from confluent_kafka import (
    Consumer,
    ConsumerGroupState,
    ConsumerGroupTopicPartitions,
    ConsumerGroupType,
    KafkaError,
    KafkaException,
    TopicPartition,
)
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)
from kio.schema.consumer_group_heartbeat.v1.request import (
    ConsumerGroupHeartbeatRequest,
)
from kio.schema.find_coordinator.v2.request import FindCoordinatorRequest
from kio.schema.metadata.v12.request import MetadataRequest, MetadataRequestTopic
from kio.schema.offset_commit.v9.request import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from kio.schema.offset_fetch.v8.request import (
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchRequestTopics,
)
from kio.schema.types import GroupId, TopicName
from kio.static.primitive import i8, i32, i32Timedelta, i64

from deploy.local.cluster import LocalCluster
from deploy.local.zookeeper import ZooKeeperServer
from odradek import Consumer as OdradekConsumer
from odradek import TopicPartition as OdradekTopicPartition
from tests.kafka.conftest import call, running_cluster, wait_for
from tests.kafka.test_confluent_kafka import create_topic, produce, unique

_KAFKA_PYTHON_WARNING = "ignore:read_text is deprecated:DeprecationWarning"
with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka import KafkaAdminClient, KafkaConsumer, OffsetAndMetadata
    from kafka import TopicPartition as KpTopicPartition
    from kafka import errors as kafka_errors

pytestmark = pytest.mark.filterwarnings(_KAFKA_PYTHON_WARNING)

UNKNOWN_MEMBER_ID = 25
INVALID_GROUP_ID = 24
GROUP_ID_NOT_FOUND = 69
NON_EMPTY_GROUP = 68
FENCED_MEMBER_EPOCH = 110
STALE_MEMBER_EPOCH = 113
UNKNOWN_TOPIC_OR_PARTITION = 3
NOT_COORDINATOR = 16
UNKNOWN_TOPIC_ID = 100

GROUP_OPERATIONS = {"READ", "DESCRIBE", "DELETE", "DESCRIBE_CONFIGS", "ALTER_CONFIGS"}
"""Kafka 4's operations on a group (AclEntry.supportedOperations: its configs included)."""


def kip848(bootstrap: str, group: str, **config: object) -> Consumer:
    return Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "group.protocol": "consumer",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            **config,
        }
    )


def partitions_of(consumer: Consumer) -> set[int]:
    return {tp.partition for tp in consumer.assignment()}


@pytest.fixture(scope="module")
def admin(bootstrap: str, kafka_cluster: LocalCluster) -> AdminClient:
    client = AdminClient({"bootstrap.servers": bootstrap})
    wait_for(
        lambda: len(client.list_topics(timeout=10).brokers) == len(kafka_cluster.nodes),
        "every node in the metadata",
    )
    return client


@pytest.fixture(scope="module")
def kp_admin(bootstrap: str, admin: AdminClient) -> Iterator[KafkaAdminClient]:
    client = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=60_000)
    try:
        yield client
    finally:
        client.close()


def wait_split(
    consumers: list[Consumer], partitions: int, extra: Callable[[], set[int]] | None = None
) -> None:
    """Polls every consumer until their assignments split ``range(partitions)``: none empty,
    no overlap, full coverage."""

    def split() -> bool:
        for c in consumers:
            c.poll(0.05)
        sets = [partitions_of(c) for c in consumers] + ([extra()] if extra else [])
        union = set().union(*sets)
        return all(sets) and sum(map(len, sets)) == partitions and union == set(range(partitions))

    wait_for(split, "the members split the partitions")


# -- KIP-848 over the wire: librdkafka's group.protocol=consumer ---------------------------------


def test_three_kip848_consumers_split_a_topic_and_a_restart_resumes_at_the_commits(
    bootstrap, admin
):
    topic, group = unique("kip848"), unique("g848")
    create_topic(bootstrap, topic, partitions=6)
    consumers = [kip848(bootstrap, group) for _ in range(3)]
    for c in consumers:
        c.subscribe([topic])
    wait_split(consumers, 6)

    def balanced() -> bool:
        # the uniform assignor's 2/2/2, once the reconciliation that moves partitions is over
        # (a member waits for what another still revokes: 3/1/2 on the way)
        for c in consumers:
            c.poll(0.05)
        return all(len(partitions_of(c)) == 2 for c in consumers)

    wait_for(balanced, "two partitions each")
    owned = [partitions_of(c) for c in consumers]

    produce(bootstrap, topic, [{"value": f"a{i}".encode(), "partition": i % 6} for i in range(60)])
    seen: dict[tuple[int, int], int] = {}

    def consume_all() -> bool:
        for n, c in enumerate(consumers):
            msg = c.poll(0.1)
            if msg is None or msg.error():
                continue
            key = (int(msg.partition() or 0), int(msg.offset() or 0))
            assert key not in seen, f"{key} read twice"
            assert msg.partition() in owned[n]
            seen[key] = n
        return len(seen) == 60

    wait_for(consume_all, "60 records consumed")
    for c in consumers:
        c.commit(asynchronous=False)

    # the group as the admin client sees it while its members run
    described = admin.describe_consumer_groups([group])[group].result(timeout=60)
    assert described.type == ConsumerGroupType.CONSUMER
    assert described.state == ConsumerGroupState.STABLE
    assert len(described.members) == 3
    assigned = sorted(
        tp.partition for m in described.members for tp in m.assignment.topic_partitions
    )
    assert assigned == list(range(6))
    assert not described.authorized_operations  # not asked for
    # KIP-430 through ConsumerGroupDescribe: no authorizer, every group operation
    asked = admin.describe_consumer_groups([group], include_authorized_operations=True)
    operations = asked[group].result(timeout=60).authorized_operations
    assert {op.name for op in operations} == GROUP_OPERATIONS
    listed = admin.list_consumer_groups(states={ConsumerGroupState.STABLE}).result(timeout=60)
    assert group in {g.group_id for g in listed.valid}

    for c in consumers:
        c.close()
    produce(bootstrap, topic, [{"value": f"b{i}".encode(), "partition": i % 6} for i in range(30)])
    restarted = kip848(bootstrap, group)
    restarted.subscribe([topic])
    values: list[bytes] = []

    def rest() -> bool:
        msg = restarted.poll(0.2)
        if msg is not None and not msg.error():
            values.append(bytes(msg.value() or b""))
        return len(values) >= 30

    try:
        wait_for(rest, "the 30 new records")
        assert sorted(values) == sorted(f"b{i}".encode() for i in range(30))
        assert restarted.poll(1.0) is None
    finally:
        restarted.close()


def test_admin_client_lists_describes_alters_deletes_offsets_and_groups(bootstrap, admin):
    topic, group = unique("adm"), unique("gadm")
    create_topic(bootstrap, topic, partitions=3)
    produce(bootstrap, topic, [{"value": b"x", "partition": i % 3} for i in range(9)])
    member = kip848(bootstrap, group)
    member.subscribe([topic])
    wait_for(lambda: member.poll(0.1) is not None or partitions_of(member) == {0, 1, 2}, "assigned")
    wait_for(lambda: (member.poll(0.05), partitions_of(member) == {0, 1, 2})[1], "assigned")
    member.commit(offsets=[TopicPartition(topic, p, 2) for p in range(3)], asynchronous=False)

    # a group with members refuses deletion and admin commits
    deleted = admin.delete_consumer_groups([group])[group]
    with pytest.raises(KafkaException) as refused:
        deleted.result(timeout=60)
    assert refused.value.args[0].code() == KafkaError.NON_EMPTY_GROUP
    member.close()

    listed = admin.list_consumer_group_offsets(
        [ConsumerGroupTopicPartitions(group, [TopicPartition(topic, p) for p in range(3)])]
    )[group].result(timeout=60)
    assert [(tp.partition, tp.offset) for tp in listed.topic_partitions] == [(0, 2), (1, 2), (2, 2)]

    altered = admin.alter_consumer_group_offsets(
        [ConsumerGroupTopicPartitions(group, [TopicPartition(topic, 0, 5)])]
    )[group].result(timeout=60)
    assert [(tp.partition, tp.offset, tp.error) for tp in altered.topic_partitions] == [
        (0, 5, None)
    ]
    listed = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group].result(
        timeout=60
    )
    assert sorted((tp.partition, tp.offset) for tp in listed.topic_partitions) == [
        (0, 5),
        (1, 2),
        (2, 2),
    ]

    empties = admin.list_consumer_groups(
        states={ConsumerGroupState.EMPTY}, types={ConsumerGroupType.CONSUMER}
    ).result(timeout=60)
    assert group in {g.group_id for g in empties.valid}
    stable = admin.list_consumer_groups(states={ConsumerGroupState.STABLE}).result(timeout=60)
    assert group not in {g.group_id for g in stable.valid}

    admin.delete_consumer_groups([group])[group].result(timeout=60)
    assert group not in {g.group_id for g in admin.list_consumer_groups().result(timeout=60).valid}
    gone = admin.delete_consumer_groups([group])[group]
    with pytest.raises(KafkaException) as unknown:
        gone.result(timeout=60)
    assert unknown.value.args[0].code() == KafkaError.GROUP_ID_NOT_FOUND


# -- simple consumers: assign() and commits without a generation ------------------------------


def test_confluent_kafka_simple_consumer_commits_and_reads_them_back(bootstrap, admin):
    topic, group = unique("simple"), unique("gsimple")
    create_topic(bootstrap, topic, partitions=2)
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False}
    )
    try:
        consumer.assign([TopicPartition(topic, 0, 0), TopicPartition(topic, 1, 0)])
        consumer.commit(
            offsets=[TopicPartition(topic, 0, 7, metadata="seven"), TopicPartition(topic, 1, 3)],
            asynchronous=False,
        )
        committed = consumer.committed(
            [TopicPartition(topic, 0), TopicPartition(topic, 1)], timeout=30
        )
        assert [(tp.partition, tp.offset) for tp in committed] == [(0, 7), (1, 3)]
        assert committed[0].metadata == "seven"
        # a commit to a partition the topic does not have is refused for that partition
        try:
            answer = consumer.commit(offsets=[TopicPartition(topic, 9, 1)], asynchronous=False)
            error = answer[0].error
            assert error is not None
            code = error.code()
        except KafkaException as e:
            code = e.args[0].code()
        assert code == KafkaError.UNKNOWN_TOPIC_OR_PART
    finally:
        consumer.close()
    # a group of commits alone: Kafka's empty classic group for DescribeGroups, no KIP-848 group
    described = admin.describe_consumer_groups([group])[group].result(timeout=60)
    assert described.state == ConsumerGroupState.EMPTY
    assert described.members == []


def test_kip848_consumer_that_only_assigns_commits_and_reads_its_commits_back(bootstrap, admin):
    """librdkafka with group.protocol=consumer that never subscribes sends OffsetCommit with
    its own member id and epoch -1: Kafka takes it while the group has no members, whatever the
    member id (ConsumerGroup.validateOffsetCommit). Before, the coordinator answered
    UNKNOWN_MEMBER_ID."""
    topic, group = unique("assign848"), unique("gassign848")
    create_topic(bootstrap, topic, partitions=2)
    consumer = kip848(bootstrap, group)
    try:
        consumer.assign([TopicPartition(topic, 0, 0), TopicPartition(topic, 1, 0)])
        answer = consumer.commit(
            offsets=[TopicPartition(topic, 0, 11, metadata="eleven"), TopicPartition(topic, 1, 4)],
            asynchronous=False,
        )
        assert [(tp.partition, tp.error) for tp in answer] == [(0, None), (1, None)]
        committed = consumer.committed(
            [TopicPartition(topic, 0), TopicPartition(topic, 1)], timeout=30
        )
        assert [(tp.partition, tp.offset) for tp in committed] == [(0, 11), (1, 4)]
        assert committed[0].metadata == "eleven"
    finally:
        consumer.close()
    listed = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group].result(
        timeout=60
    )
    assert sorted((tp.partition, tp.offset) for tp in listed.topic_partitions) == [(0, 11), (1, 4)]


def test_kafka_python_simple_consumer_and_admin_client(bootstrap, kp_admin):
    topic, group = unique("kpsimple"), unique("gkp")
    create_topic(bootstrap, topic, partitions=2)
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap, group_id=GroupId(group), enable_auto_commit=False
    )
    tps = [KpTopicPartition(topic, 0), KpTopicPartition(topic, 1)]
    try:
        consumer.assign(tps)
        consumer.commit(
            {tps[0]: OffsetAndMetadata(4, "four", -1), tps[1]: OffsetAndMetadata(6, "", -1)}
        )
        assert consumer.committed(tps[0]) == 4
        assert consumer.committed(tps[1]) == 6
    finally:
        consumer.close()

    other = unique("gkp2")
    with KafkaConsumer(bootstrap_servers=bootstrap, group_id=other) as second:
        second.commit({tps[0]: OffsetAndMetadata(1, "", -1)})
    listed = {g["group_id"]: g for g in kp_admin.list_groups()}
    assert listed[group]["group_state"] == "Empty"
    # only the groups of a state asked for (ListGroups v4+)
    stable = kp_admin.list_groups(states_filter=["Stable"])
    assert group not in {g["group_id"] for g in stable}
    # DescribeGroups (the classic protocol's): a group of commits alone is an empty classic group
    described = kp_admin.describe_groups([group])[group]
    assert (described["group_state"], described["protocol_type"], described["error"]) == (
        "Empty",
        "",
        None,
    )
    assert described["members"] == []
    # OffsetFetch v8: both groups in one request
    both = kp_admin.list_group_offsets({group: None, other: None})
    assert {tp.partition: om.offset for tp, om in both[group].items()} == {0: 4, 1: 6}
    assert both[group][tps[0]].metadata == "four"
    assert {tp.partition: om.offset for tp, om in both[other].items()} == {0: 1}
    # OffsetDelete, and an admin commit (the group has no member)
    assert kp_admin.delete_group_offsets(group, [tps[1]]) == {tps[1]: kafka_errors.NoError}
    assert kp_admin.alter_group_offsets(group, {tps[0]: OffsetAndMetadata(9, "", -1)}) == {
        tps[0]: kafka_errors.NoError
    }
    after = kp_admin.list_group_offsets({group: None})[group]
    assert {tp.partition: om.offset for tp, om in after.items()} == {0: 9}
    assert kp_admin.delete_groups([group, other]) == {group: "OK", other: "OK"}
    assert kp_admin.list_group_offsets({group: None}) == {group: {}}
    assert group not in {g["group_id"] for g in kp_admin.list_groups()}


# -- an odradek SDK member and a librdkafka KIP-848 member in one group ------------------------


def test_an_sdk_member_and_a_librdkafka_member_split_the_partitions(
    kafka_cluster, bootstrap, kp_admin
):
    topic, group = unique("mixed"), unique("gmixed")
    create_topic(bootstrap, topic, partitions=4)
    sdk = OdradekConsumer(
        kafka_cluster.bootstrap_servers, group_id=GroupId(group), enable_auto_commit=False
    )
    rdk = kip848(bootstrap, group)
    try:
        sdk.subscribe([topic])
        rdk.subscribe([topic])

        def sdk_partitions() -> set[int]:
            sdk.poll(timeout_ms=50)
            return {tp.partition for tp in sdk.assignment()}

        wait_split([rdk], 4, extra=sdk_partitions)
        assert all(isinstance(tp, OdradekTopicPartition) for tp in sdk.assignment())
        # the classic protocol's DescribeGroups answers a KIP-848 group Dead, as Kafka 4 does
        described = kp_admin.describe_groups([group])[group]
        assert (described["group_state"], described["members"]) == ("Dead", [])
    finally:
        rdk.close()
        sdk.close()


# -- bad input: Kafka's error codes -------------------------------------------------------------


def coordinator_of(kafka_cluster: LocalCluster, group: str) -> str:
    def find() -> str | None:
        answer = call(
            kafka_cluster.nodes[0].kafka_address, FindCoordinatorRequest(key=group, key_type=i8(0))
        )
        return None if answer.error_code else f"{answer.host}:{answer.port}"

    return str(wait_for(find, f"a coordinator for {group}"))


def offset_commit(
    address: str, version: int, group: str, topic: str | uuid.UUID, offset: int, *partitions: int
) -> Any:
    """A simple consumer's OffsetCommit of ``version`` (-1 and no member): ``offset`` for
    ``partitions`` of ``topic`` (v10: a topic id)."""
    module = importlib.import_module(f"kio.schema.offset_commit.v{version}.request")
    by = {"topic_id": topic} if version >= 10 else {"name": TopicName(str(topic))}
    return call(
        address,
        module.OffsetCommitRequest(
            group_id=GroupId(group),
            generation_id_or_member_epoch=i32(-1),
            member_id="",
            topics=(
                module.OffsetCommitRequestTopic(
                    **by,
                    partitions=tuple(
                        module.OffsetCommitRequestPartition(
                            partition_index=i32(p),
                            committed_offset=i64(offset),
                            committed_leader_epoch=i32(-1),
                            committed_metadata=f"at {offset}",
                        )
                        for p in partitions
                    ),
                ),
            ),
        ),
    )


def group_coordinated(kafka_cluster: LocalCluster, address: str, here: bool) -> str:
    """A new group id whose coordinator is (``here``) or is not the node at ``address``."""
    while True:
        group = unique("gc")
        if (coordinator_of(kafka_cluster, group) == address) == here:
            return group


def known_to(address: str, topic: str, partitions: int) -> Any:
    """The Metadata v12 topic of ``topic`` from the node at ``address`` once it knows the topic
    (a node learns of a topic by the controller's UpdateMetadata, maybe after the node a client
    created it through)."""

    def known() -> Any:
        answer = call(
            address,
            MetadataRequest(
                topics=(MetadataRequestTopic(topic_id=None, name=TopicName(topic)),),
                allow_auto_topic_creation=False,
                include_topic_authorized_operations=False,
            ),
        )
        (t,) = answer.topics
        return t if int(t.error_code) == 0 and len(t.partitions) == partitions else None

    return wait_for(known, f"{topic} known to {address}")


def test_metadata_v12_gives_topic_ids_and_finds_topics_by_id(kafka_cluster, bootstrap):
    topic = unique("byid")
    create_topic(bootstrap, topic, partitions=2)
    address = kafka_cluster.nodes[1].kafka_address

    found = known_to(address, topic, 2)
    assert found.topic_id is not None and found.topic_id != uuid.UUID(int=0)
    stranger = uuid.uuid4()
    by_id = call(
        address,
        MetadataRequest(
            topics=(
                MetadataRequestTopic(topic_id=found.topic_id, name=None),
                MetadataRequestTopic(topic_id=stranger, name=None),
            ),
            allow_auto_topic_creation=False,
            include_topic_authorized_operations=False,
        ),
    )
    assert [(t.name, t.topic_id, int(t.error_code)) for t in by_id.topics] == [
        (topic, found.topic_id, 0),
        (None, stranger, UNKNOWN_TOPIC_ID),
    ]
    assert len(by_id.topics[0].partitions) == 2


def heartbeat(address: str, group: str, member: str, epoch: int, topic: str | None = None) -> Any:
    return call(
        address,
        ConsumerGroupHeartbeatRequest(
            group_id=GroupId(group),
            member_id=member,
            member_epoch=i32(epoch),
            rebalance_timeout=i32Timedelta.parse(timedelta(seconds=30)),
            subscribed_topic_names=(TopicName(topic),) if topic else None,
            topic_partitions=() if epoch == 0 else None,
        ),
    )


def test_bad_member_ids_epochs_and_group_ids_get_kafkas_errors(kafka_cluster, bootstrap):
    topic, group = unique("bad"), unique("gbad")
    create_topic(bootstrap, topic, partitions=2)
    address = coordinator_of(kafka_cluster, group)
    known_to(address, topic, 2)
    member = uuid.uuid4().hex
    joined = heartbeat(address, group, member, 0, topic)
    assert int(joined.error_code) == 0, joined
    epoch = int(joined.member_epoch)
    assert epoch >= 1

    unknown = heartbeat(address, group, "nobody", epoch)
    assert int(unknown.error_code) == UNKNOWN_MEMBER_ID
    fenced = heartbeat(address, group, member, epoch + 5)
    assert int(fenced.error_code) == FENCED_MEMBER_EPOCH

    def commit(
        member_id: str,
        member_epoch: int,
        group_id: str = group,
        partition: int = 0,
        offset: int = 1,
    ) -> int:
        answer = call(
            address,
            OffsetCommitRequest(
                group_id=GroupId(group_id),
                generation_id_or_member_epoch=i32(member_epoch),
                member_id=member_id,
                topics=(
                    OffsetCommitRequestTopic(
                        name=TopicName(topic),
                        partitions=(
                            OffsetCommitRequestPartition(
                                partition_index=i32(partition),
                                committed_offset=i64(offset),
                                committed_leader_epoch=i32(-1),
                                committed_metadata="",
                            ),
                        ),
                    ),
                ),
            ),
        )
        return int(answer.topics[0].partitions[0].error_code)

    assert commit("nobody", epoch) == UNKNOWN_MEMBER_ID
    assert commit(member, epoch + 3) == STALE_MEMBER_EPOCH
    # a simple consumer's commit while the group has members
    assert commit("", -1) == UNKNOWN_MEMBER_ID

    # group ids longer than Kafka's strings (only a flexible version can carry one)
    long_group = "g" * 40_000
    assert commit("", -1, long_group) == INVALID_GROUP_ID
    long_hb = heartbeat(address, long_group, member, 0, topic)
    assert int(long_hb.error_code) == INVALID_GROUP_ID

    # OffsetFetch v8: several groups in one request, each with its own answer (a client sends
    # each coordinator its own groups: another's answers NOT_COORDINATOR)
    same, elsewhere = (
        group_coordinated(kafka_cluster, address, True),
        group_coordinated(kafka_cluster, address, False),
    )
    assert commit("", -1, same, partition=1, offset=8) == 0
    fetched = call(
        address,
        OffsetFetchRequest(
            groups=(
                OffsetFetchRequestGroup(
                    group_id=GroupId(group),
                    topics=(
                        OffsetFetchRequestTopics(
                            name=TopicName(topic), partition_indexes=(i32(0),)
                        ),
                    ),
                ),
                OffsetFetchRequestGroup(group_id=GroupId(same), topics=None),
                OffsetFetchRequestGroup(group_id=GroupId(elsewhere), topics=None),
            ),
            require_stable=False,
        ),
    )
    first, second, _ = fetched.groups
    assert [int(g.error_code) for g in fetched.groups] == [0, 0, NOT_COORDINATOR]
    assert [(p.partition_index, p.committed_offset) for p in first.topics[0].partitions] == [
        (0, -1)
    ]
    assert [(p.partition_index, p.committed_offset) for p in second.topics[0].partitions] == [
        (1, 8)
    ]

    left = heartbeat(address, group, member, -1)
    assert int(left.error_code) == 0


# -- ACLs: Kafka's checks on groups and topics --------------------------------------------------


@pytest.fixture(scope="module")
def acl_bootstrap(
    tmp_path_factory: pytest.TempPathFactory, zookeeper: ZooKeeperServer
) -> Iterator[str]:
    """One node with Kafka's ACL authorizer; a resource without ACLs is open to everyone."""
    with running_cluster(
        tmp_path_factory,
        zookeeper,
        "kafka-group-acl-cluster",
        nodes=1,
        overrides={
            "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
            "allow.everyone.if.no.acl.found": "true",
            "offsets.topic.replication.factor": "1",
        },
    ) as cluster:
        probe = AdminClient({"bootstrap.servers": cluster.kafka_bootstrap_servers})

        def brokers() -> bool:
            # librdkafka raises _PARTIAL for an answer without brokers: the node's before the
            # controller's first update reaches it
            try:
                return bool(probe.list_topics(timeout=10).brokers)
            except KafkaException:
                return False

        wait_for(brokers, "the node in its metadata")
        yield cluster.kafka_bootstrap_servers


def _acl(
    resource: ResourceType, name: str, operation: AclOperation, allow: bool = False
) -> AclBinding:
    return AclBinding(
        resource,
        name,
        ResourcePatternType.LITERAL,
        "User:ANONYMOUS",
        "*",
        operation,
        AclPermissionType.ALLOW if allow else AclPermissionType.DENY,
    )


def test_group_and_topic_acls_are_kafkas(acl_bootstrap):
    admin = AdminClient({"bootstrap.servers": acl_bootstrap})
    topic, locked_topic = unique("aclt"), unique("acllocked")
    group, locked_group = unique("aclg"), unique("acllockedg")
    futures = admin.create_topics([NewTopic(topic, 1, 1), NewTopic(locked_topic, 1, 1)])
    for f in futures.values():
        f.result(timeout=60)
    address = acl_bootstrap.split(",")[0]
    locked_id = known_to(address, locked_topic, 1).topic_id
    # an ACL on a resource ends allow.everyone.if.no.acl.found for it: what is left is allowed
    acls = [
        _acl(ResourceType.GROUP, locked_group, AclOperation.DESCRIBE, allow=True),
        _acl(ResourceType.GROUP, group, AclOperation.READ, allow=True),
        _acl(ResourceType.GROUP, group, AclOperation.DELETE),
        _acl(ResourceType.TOPIC, locked_topic, AclOperation.READ),
    ]
    for f in admin.create_acls(acls).values():
        f.result(timeout=60)

    def commit(group_id: str, offsets: list[TopicPartition]) -> list[int]:
        consumer = Consumer(
            {"bootstrap.servers": acl_bootstrap, "group.id": group_id, "enable.auto.commit": False}
        )
        try:
            answer = consumer.commit(offsets=offsets, asynchronous=False)
            return [tp.error.code() if tp.error else 0 for tp in answer]
        except KafkaException as e:
            return [e.args[0].code()]
        finally:
            consumer.close()

    # READ on the group (DESCRIBE is allowed: FindCoordinator answers)
    assert commit(locked_group, [TopicPartition(topic, 0, 1)]) == [
        KafkaError.GROUP_AUTHORIZATION_FAILED
    ]
    # READ on each topic: the refused topic's partitions answer TOPIC_AUTHORIZATION_FAILED, the
    # others are committed
    codes = commit(group, [TopicPartition(topic, 0, 3), TopicPartition(locked_topic, 0, 3)])
    # (librdkafka raises the commit's first error)
    assert codes == [KafkaError.TOPIC_AUTHORIZATION_FAILED]
    listed = admin.list_consumer_group_offsets(
        [ConsumerGroupTopicPartitions(group, [TopicPartition(topic, 0)])]
    )[group].result(timeout=60)
    assert [(tp.partition, tp.offset) for tp in listed.topic_partitions] == [(0, 3)]
    # Metadata v12 by id of a topic the principal may not DESCRIBE: no name given away
    by_id = call(
        address,
        MetadataRequest(
            topics=(MetadataRequestTopic(topic_id=locked_id, name=None),),
            allow_auto_topic_creation=False,
            include_topic_authorized_operations=False,
        ),
    )
    assert [(t.name, t.topic_id, int(t.error_code)) for t in by_id.topics] == [
        (None, locked_id, KafkaError.TOPIC_AUTHORIZATION_FAILED)
    ]
    # OffsetCommit v10 (topics by id): the group is checked first, then an id the node does not
    # know answers UNKNOWN_TOPIC_ID, a known topic READ
    stranger = uuid.uuid4()
    for group_id, codes in [
        (locked_group, [KafkaError.GROUP_AUTHORIZATION_FAILED] * 2),
        (group, [KafkaError.TOPIC_AUTHORIZATION_FAILED, UNKNOWN_TOPIC_ID]),
    ]:
        answers = [offset_commit(address, 10, group_id, t, 4, 0) for t in (locked_id, stranger)]
        assert [int(a.topics[0].partitions[0].error_code) for a in answers] == codes
    # DELETE on the group
    with pytest.raises(KafkaException) as refused:
        admin.delete_consumer_groups([group])[group].result(timeout=60)
    assert refused.value.args[0].code() == KafkaError.GROUP_AUTHORIZATION_FAILED
