"""ShareFetch and ShareAcknowledge (KIP-932's partition-leader side) as raw frames against a real
three-node cluster: records acquired with their delivery counts, accepted (never delivered
again), released (delivered again, count 2), rejected (never delivered again), a lock expiring
(delivered to another member with count 2), renewed (v2), and Kafka's codes for bad input:
share session epochs, acknowledgements of records not held, unknown topic ids, a partition's
follower answering NOT_LEADER_OR_FOLLOWER with the leader and its endpoint.

A share group's member id is the client's own UUID for ShareFetch (no heartbeat is needed to
fetch); share partitions start at the high watermark (``share.auto.offset.reset`` latest), so
each test opens its session before producing."""

from __future__ import annotations

import functools
import uuid
from collections.abc import Iterator, Sequence
from datetime import timedelta
from typing import Any

import grpc
import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ResourceType,
)
from kio.schema.metadata.v12.request import MetadataRequest, MetadataRequestTopic
from kio.schema.share_acknowledge.v1 import request as ack_v1
from kio.schema.share_fetch.v1 import request as fetch_v1
from kio.schema.share_fetch.v2 import request as fetch_v2
from kio.schema.types import GroupId, TopicName
from kio.static.primitive import i8, i32, i32Timedelta, i64

from deploy.local.cluster import LocalCluster
from deploy.local.zookeeper import ZooKeeperServer
from node.kafka_door.topic_ids import topic_id_text
from odradek.records import read_batches
from odradek.v1 import odradek_pb2 as pb
from odradek.v1 import odradek_pb2_grpc as pb_grpc
from tests.kafka.conftest import call, running_cluster, wait_for
from tests.kafka.test_confluent_kafka import create_topic, produce, unique

UNKNOWN_TOPIC_OR_PARTITION = 3
NOT_LEADER_OR_FOLLOWER = 6
INVALID_REQUEST = 42
UNKNOWN_TOPIC_ID = 100
INVALID_RECORD_STATE = 121
SHARE_SESSION_NOT_FOUND = 122
INVALID_SHARE_SESSION_EPOCH = 123
ACCEPT, RELEASE, REJECT, RENEW = 1, 2, 3, 4
LOCK_MS = 1000


@pytest.fixture(scope="module")
def share_cluster(
    tmp_path_factory: pytest.TempPathFactory, zookeeper: ZooKeeperServer
) -> Iterator[LocalCluster]:
    with running_cluster(
        tmp_path_factory,
        zookeeper,
        "share-fetch",
        overrides={
            "group.share.record.lock.duration.ms": str(LOCK_MS),
            "group.share.min.record.lock.duration.ms": str(LOCK_MS),
        },
    ) as cluster:
        yield cluster


def _bootstrap(cluster: LocalCluster) -> str:
    return ",".join(n.kafka_address for n in cluster.nodes)


def _topic(cluster: LocalCluster) -> tuple[str, uuid.UUID, str, str]:
    """A new one-partition topic: its name, id, its leader's address and a follower's."""
    name = unique("share")
    create_topic(_bootstrap(cluster), name, partitions=1)

    def known(address: str = cluster.nodes[0].kafka_address) -> Any:
        answer = call(
            address,
            MetadataRequest(
                topics=(MetadataRequestTopic(topic_id=None, name=TopicName(name)),),
                allow_auto_topic_creation=False,
                include_topic_authorized_operations=False,
            ),
        )
        (t,) = answer.topics
        if int(t.error_code) or not t.partitions or int(t.partitions[0].leader_id) < 0:
            return None
        return t

    t = wait_for(known, f"{name}'s leader")
    leader = int(t.partitions[0].leader_id)
    by_id = {n.node_id: n.kafka_address for n in cluster.nodes}
    follower = next(a for i, a in by_id.items() if i != leader)
    for address in by_id.values():  # every node has learnt of it (UpdateMetadata)
        wait_for(functools.partial(known, address), f"{name} known to {address}")
    return name, t.topic_id, by_id[leader], follower


class Member:
    """One share consumer's session with one broker, as raw ShareFetch / ShareAcknowledge."""

    def __init__(self, address: str, group: str, topic_id: uuid.UUID) -> None:
        self.address = address
        self.group = group
        self.topic_id = topic_id
        self.member_id = str(uuid.uuid4())
        self.epoch = 0

    def fetch(
        self,
        acks: Sequence[tuple[int, int, int]] = (),
        *,
        max_wait_ms: int = 0,
        max_records: int = 500,
        epoch: int | None = None,
        topic_id: uuid.UUID | None = None,
        version: int = 1,
        renew: bool = False,
        partition: int = 0,
    ) -> Any:
        module = fetch_v2 if version == 2 else fetch_v1
        fields: dict[str, Any] = {"is_renew_ack": renew} if version == 2 else {}
        request = module.ShareFetchRequest(
            group_id=GroupId(self.group),
            member_id=self.member_id,
            share_session_epoch=i32(self.epoch if epoch is None else epoch),
            max_wait=i32Timedelta.parse(timedelta(milliseconds=max_wait_ms)),
            min_bytes=i32(1),
            max_bytes=i32(1 << 20),
            max_records=i32(max_records),
            batch_size=i32(500),
            topics=(
                module.FetchTopic(
                    topic_id=topic_id or self.topic_id,
                    partitions=(
                        module.FetchPartition(
                            partition_index=i32(partition),
                            acknowledgement_batches=tuple(
                                module.AcknowledgementBatch(
                                    first_offset=i64(first),
                                    last_offset=i64(last),
                                    acknowledge_types=(i8(kind),),
                                )
                                for first, last, kind in acks
                            ),
                        ),
                    ),
                ),
            ),
            forgotten_topics_data=(),
            **fields,
        )
        answer = call(self.address, request)
        if int(answer.error_code) == 0 and epoch is None:
            self.epoch += 1
        return answer

    def acknowledge(self, acks: Sequence[tuple[int, int, int]], *, epoch: int | None = None) -> Any:
        request = ack_v1.ShareAcknowledgeRequest(
            group_id=GroupId(self.group),
            member_id=self.member_id,
            share_session_epoch=i32(self.epoch if epoch is None else epoch),
            topics=(
                ack_v1.AcknowledgeTopic(
                    topic_id=self.topic_id,
                    partitions=(
                        ack_v1.AcknowledgePartition(
                            partition_index=i32(0),
                            acknowledgement_batches=tuple(
                                ack_v1.AcknowledgementBatch(
                                    first_offset=i64(first),
                                    last_offset=i64(last),
                                    acknowledge_types=(i8(kind),),
                                )
                                for first, last, kind in acks
                            ),
                        ),
                    ),
                ),
            ),
        )
        answer = call(self.address, request)
        if int(answer.error_code) == 0 and epoch is None:
            self.epoch += 1
        return answer


def _partition(answer: Any) -> Any:
    assert int(answer.error_code) == 0, answer
    [topic] = answer.responses
    [partition] = topic.partitions
    return partition


def _acquired(answer: Any) -> list[tuple[int, int, int]]:
    p = _partition(answer)
    assert int(p.error_code) == 0, p
    return [
        (int(a.first_offset), int(a.last_offset), int(a.delivery_count)) for a in p.acquired_records
    ]


def _values(answer: Any) -> list[bytes]:
    p = _partition(answer)
    held = {o for a in p.acquired_records for o in range(a.first_offset, a.last_offset + 1)}
    return [
        r.value or b""
        for batch in read_batches(bytes(p.records))
        for r in batch.records()
        if r.offset in held
    ]


def _setup(cluster: LocalCluster, records: int) -> tuple[str, uuid.UUID, str, str, str]:
    """A topic, a group, and the share partition started (at offset 0) before ``records``
    records are produced."""
    name, topic_id, leader, follower = _topic(cluster)
    group = unique("sg")
    opener = Member(leader, group, topic_id)
    assert _acquired(opener.fetch()) == []
    opener.fetch(epoch=-1)
    produce(
        _bootstrap(cluster),
        name,
        [{"value": f"v{i}".encode(), "partition": 0} for i in range(records)],
        **{"linger.ms": 1000},
    )
    return name, topic_id, leader, follower, group


def test_acquire_accept_never_again(share_cluster: LocalCluster) -> None:
    _, topic_id, leader, _, group = _setup(share_cluster, 5)
    a = Member(leader, group, topic_id)
    first = a.fetch(max_wait_ms=10_000)
    assert _acquired(first) == [(0, 4, 1)]
    assert _values(first) == [b"v0", b"v1", b"v2", b"v3", b"v4"]
    assert int(first.acquisition_lock_timeout.total_seconds() * 1000) == LOCK_MS
    assert int(_partition(a.acknowledge([(0, 4, ACCEPT)])).error_code) == 0
    b = Member(leader, group, topic_id)
    assert _acquired(b.fetch(max_wait_ms=200)) == []


def test_release_redelivers_with_count_two_and_reject_never(share_cluster: LocalCluster) -> None:
    _, topic_id, leader, _, group = _setup(share_cluster, 4)
    a = Member(leader, group, topic_id)
    assert _acquired(a.fetch(max_wait_ms=10_000)) == [(0, 3, 1)]
    # piggy-backed on the next ShareFetch: 0-1 released, 2 rejected, 3 accepted
    answer = a.fetch([(0, 1, RELEASE), (2, 2, REJECT), (3, 3, ACCEPT)])
    p = _partition(answer)
    assert int(p.acknowledge_error_code) == 0
    assert _acquired(answer) == [(0, 1, 2)]  # the released ones, again, to the same member
    b = Member(leader, group, topic_id)
    assert _acquired(b.fetch(max_wait_ms=200)) == []


def test_an_expired_lock_delivers_to_another_member_with_count_two(
    share_cluster: LocalCluster,
) -> None:
    _, topic_id, leader, _, group = _setup(share_cluster, 3)
    a = Member(leader, group, topic_id)
    assert _acquired(a.fetch(max_wait_ms=10_000)) == [(0, 2, 1)]
    b = Member(leader, group, topic_id)
    # waits (long poll) until a's lock expires, LOCK_MS after it was taken
    got = wait_for(lambda: _acquired(b.fetch(max_wait_ms=5_000)), "a's lock to expire")
    assert got == [(0, 2, 2)]
    late = a.acknowledge([(0, 2, ACCEPT)])
    assert int(_partition(late).error_code) == INVALID_RECORD_STATE
    assert int(_partition(b.acknowledge([(0, 2, ACCEPT)])).error_code) == 0


def test_renew_keeps_the_lock(share_cluster: LocalCluster) -> None:
    _, topic_id, leader, _, group = _setup(share_cluster, 1)
    a = Member(leader, group, topic_id)
    assert _acquired(a.fetch(max_wait_ms=10_000, version=2)) == [(0, 0, 1)]
    renewed = a.fetch([(0, 0, RENEW)], version=2, renew=True)
    assert int(_partition(renewed).acknowledge_error_code) == 0
    assert _acquired(renewed) == []  # a renewing ShareFetch fetches nothing
    assert int(_partition(a.acknowledge([(0, 0, ACCEPT)])).error_code) == 0


def test_session_epochs(share_cluster: LocalCluster) -> None:
    _, topic_id, leader, _, group = _setup(share_cluster, 1)
    a = Member(leader, group, topic_id)
    assert int(a.fetch(epoch=1).error_code) == SHARE_SESSION_NOT_FOUND
    assert int(a.fetch(epoch=-1).error_code) == SHARE_SESSION_NOT_FOUND
    assert int(a.acknowledge([], epoch=0).error_code) == INVALID_SHARE_SESSION_EPOCH
    assert int(a.fetch([(0, 0, ACCEPT)], epoch=0).error_code) == INVALID_REQUEST
    a.fetch(max_wait_ms=10_000)
    assert int(a.fetch(epoch=5).error_code) == INVALID_SHARE_SESSION_EPOCH
    assert int(a.fetch(epoch=a.epoch).error_code) == 0


def test_bad_partitions(share_cluster: LocalCluster) -> None:
    _, topic_id, leader, follower, group = _setup(share_cluster, 2)
    a = Member(leader, group, topic_id)
    assert _acquired(a.fetch(max_wait_ms=10_000)) == [(0, 1, 1)]
    # an acknowledgement of records a does not hold
    p = _partition(a.fetch([(0, 5, ACCEPT)]))
    assert int(p.acknowledge_error_code) == INVALID_RECORD_STATE
    p = _partition(a.fetch([(1, 0, ACCEPT)]))  # a range backwards
    assert int(p.acknowledge_error_code) == INVALID_REQUEST
    p = _partition(a.fetch([(0, 0, RENEW)]))  # RENEW in v1 (no IsRenewAck)
    assert int(p.acknowledge_error_code) == INVALID_REQUEST
    stranger = uuid.uuid4()
    unknown = Member(leader, group, stranger).fetch()
    [topic] = unknown.responses
    assert (topic.topic_id, int(topic.partitions[0].error_code)) == (stranger, UNKNOWN_TOPIC_ID)
    [topic] = Member(leader, group, topic_id).fetch(partition=5).responses
    assert int(topic.partitions[0].error_code) == UNKNOWN_TOPIC_OR_PARTITION  # no partition 5
    elsewhere = Member(follower, group, topic_id).fetch()
    p = _partition(elsewhere)
    assert int(p.error_code) == NOT_LEADER_OR_FOLLOWER
    leader_id = int(p.current_leader.leader_id)
    assert leader_id >= 0
    assert [int(e.node_id) for e in elsewhere.node_endpoints] == [leader_id]


def test_grpc_share_fetch_and_acknowledge(share_cluster: LocalCluster) -> None:
    """The Broker service's ShareFetch and ShareAcknowledge (for the SDK) over the same share
    partitions."""
    _, topic_id, leader, _, group = _setup(share_cluster, 2)
    node = next(n for n in share_cluster.nodes if n.kafka_address == leader)
    tid = topic_id_text(topic_id)
    with grpc.insecure_channel(node.address) as channel:
        broker = pb_grpc.BrokerStub(channel)
        member = str(uuid.uuid4())
        fetched = broker.ShareFetch(
            pb.ShareFetchRequest(
                group_id=group,
                member_id=member,
                share_session_epoch=0,
                max_wait_ms=10_000,
                min_bytes=1,
                max_bytes=1 << 20,
                max_records=10,
                batch_size=10,
                partitions=[pb.SharePartitionRequest(topic_id=tid, partition=0)],
            )
        )
        assert fetched.error_code == 0, fetched
        [p] = fetched.partitions
        assert [(a.first_offset, a.last_offset, a.delivery_count) for a in p.acquired_records] == [
            (0, 1, 1)
        ]
        assert [r.value for b in read_batches(p.records) for r in b.records()] == [b"v0", b"v1"]
        batch = pb.ShareAcknowledgementBatch(first_offset=0, last_offset=1, acknowledge_types=[1])
        acked = broker.ShareAcknowledge(
            pb.ShareAcknowledgeRequest(
                group_id=group,
                member_id=member,
                share_session_epoch=1,
                partitions=[
                    pb.SharePartitionRequest(topic_id=tid, partition=0, acknowledgements=[batch])
                ],
            )
        )
        assert (acked.error_code, [q.error_code for q in acked.partitions]) == (0, [0])


def test_read_committed_never_acquires_aborted_records(share_cluster: LocalCluster) -> None:
    """``share.isolation.level=read_committed``: nothing past the last stable offset (an open
    transaction's records wait), an aborted transaction's records and the markers are never
    acquired, a committed one's and plain records are."""
    name, topic_id, leader, _, group = _setup(share_cluster, 0)
    bootstrap = _bootstrap(share_cluster)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    resource = ConfigResource(ResourceType.GROUP, group)
    resource.add_incremental_config(
        ConfigEntry(
            "share.isolation.level", "read_committed", incremental_operation=AlterConfigOpType.SET
        )
    )
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(timeout=60)
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": unique("share-txn")})
    producer.init_transactions(60)
    producer.begin_transaction()
    for i in range(2):
        producer.produce(name, value=f"aborted{i}".encode(), partition=0)
    producer.flush(60)
    probe = Member(leader, group, topic_id)

    def applied() -> bool:
        # the open transaction's records are below the high watermark: read_uncommitted (the
        # group config not yet at the leader) acquires them; give them back and ask again
        got = _acquired(probe.fetch())
        if got:
            probe.fetch([(first, last, RELEASE) for first, last, _ in got])
        return not got

    wait_for(applied, "share.isolation.level=read_committed at the leader")
    producer.abort_transaction(60)
    producer.begin_transaction()
    producer.produce(name, value=b"committed", partition=0)
    producer.commit_transaction(60)
    produce(bootstrap, name, [{"value": b"plain", "partition": 0}])
    member = Member(leader, group, topic_id)
    delivered: list[bytes] = []

    def all_delivered() -> bool:
        answer = member.fetch(max_wait_ms=1_000)
        got = _acquired(answer)
        delivered.extend(_values(answer))
        if got:
            member.acknowledge([(first, last, ACCEPT) for first, last, _ in got])
        return b"plain" in delivered

    wait_for(all_delivered, "the committed and the plain records")
    assert delivered == [b"committed", b"plain"]


def test_the_share_partitions_state_is_durable_in_share_group_state(
    share_cluster: LocalCluster,
) -> None:
    """The node's persister is the share coordinator's: an acknowledgement's state is a
    snapshot record in ``__share_group_state`` (read back here with a Kafka consumer), under the
    share partition's key in its partition ``abs(javaHash("group:topicId:0")) % 50``. (With the
    in-memory stand-in persister, nothing was written there.)"""
    from confluent_kafka import Consumer, TopicPartition

    from node.coordinator.group_coordinator import partition_for
    from odradek.share_state_records import (
        SHARE_GROUP_STATE_TOPIC,
        decode_share_key,
        decode_share_value,
    )

    _, topic_id, leader, _, group = _setup(share_cluster, 5)
    a = Member(leader, group, topic_id)
    assert _acquired(a.fetch(max_wait_ms=10_000)) == [(0, 4, 1)]
    assert int(_partition(a.acknowledge([(0, 2, ACCEPT), (3, 3, REJECT)])).error_code) == 0
    key_text = topic_id_text(topic_id)
    state_partition = partition_for(f"{group}:{key_text}:0", 50)
    consumer = Consumer(
        {
            "bootstrap.servers": _bootstrap(share_cluster),
            "group.id": unique("reader"),
            "enable.auto.commit": False,
        }
    )
    try:
        consumer.assign([TopicPartition(SHARE_GROUP_STATE_TOPIC, state_partition, 0)])
        states: list[Any] = []

        def acknowledged() -> Any:
            message = consumer.poll(1.0)
            raw = None if message is None or message.error() else message.key()
            if message is None or raw is None:
                return None
            key = decode_share_key(raw)
            if (key.group_id, key.topic_id, key.partition) == (group, key_text, 0):
                states.append(decode_share_value(key.record_type, message.value()))
            last = states[-1] if states else None
            return last if last is not None and last.start_offset == 4 else None

        state = wait_for(acknowledged, "the acknowledged state in __share_group_state")
    finally:
        consumer.close()
    # 0-2 accepted and 3 rejected (archived): the start moved past them all; 4 is still held by
    # a (persisted as available with its delivery count: a lock does not outlive its leader)
    batches = [
        (b.first_offset, b.last_offset, b.delivery_state, b.delivery_count) for b in state.batches
    ]
    assert batches == [(4, 4, 0, 1)]
