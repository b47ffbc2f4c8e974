"""Kafka's current protocol versions on the Kafka door, each new version by raw frames (kio's
types for exactly that version, on a socket) and by the real client that sends it, against a
real three-node cluster: ListOffsets v6-v10 (flexible; the max-timestamp offset, KIP-734; the
earliest local offset, KIP-405; the latest tiered offset, KIP-1005; v10's timeout, KIP-1075);
Metadata v13; FindCoordinator v3-v5 (several keys at once, KIP-699); CreateTopics v5-v7 (the
created topic's configs and id); DescribeTopicPartitions v0 (KIP-966); Produce v9-v10 and Fetch
v12-v16 (flexible; Fetch's topic ids and last fetched epoch; KIP-951: a NOT_LEADER answer names
the current leader and its endpoint); OffsetCommit v10 and OffsetFetch v10 (topic ids, Kafka
4.2), which librdkafka 2.16 does not send yet."""

from __future__ import annotations

import importlib
import logging
import struct
import uuid
from datetime import timedelta
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec  # type: ignore[attr-defined]
from kio.schema.metadata.v12.request import MetadataRequest, MetadataRequestTopic
from kio.schema.types import BrokerId, GroupId, TopicName
from kio.static.primitive import i8, i16, i32, i32Timedelta, i64

from deploy.local.cluster import LocalCluster
from odradek import Admin
from odradek import TopicPartition as OdradekTopicPartition
from odradek.records import Record, build_batch, read_batches
from tests.kafka.conftest import call, wait_for
from tests.kafka.test_confluent_kafka import create_topic, produce, unique
from tests.kafka.test_group_apis import coordinator_of, kip848, offset_commit

NOT_LEADER_OR_FOLLOWER = 6
UNSUPPORTED_VERSION = 35
UNKNOWN_TOPIC_ID = 100
MAX_TIMESTAMP, EARLIEST_LOCAL, LATEST_TIERED = -3, -4, -5


def partition_metadata(cluster: LocalCluster, topic: str, partition: int = 0) -> tuple[Any, Any]:
    """``topic``'s Metadata v12 (its id) and ``partition``'s (leader, epoch, replicas)."""
    answer = call(
        cluster.kafka_bootstrap_servers.split(",")[0],
        MetadataRequest(
            topics=(MetadataRequestTopic(topic_id=None, name=TopicName(topic)),),
            allow_auto_topic_creation=False,
            include_topic_authorized_operations=False,
        ),
    )
    (t,) = answer.topics
    return t, next(p for p in t.partitions if int(p.partition_index) == partition)


def leader_address(cluster: LocalCluster, topic: str, partition: int = 0) -> str:
    """The Kafka address of ``topic``-``partition``'s leader."""
    _, p = partition_metadata(cluster, topic, partition)
    return next(n.kafka_address for n in cluster.nodes if n.node_id == int(p.leader_id))


def list_offsets(address: str, version: int, topic: str, timestamp: int) -> Any:
    """A consumer's ListOffsets of ``version`` for ``topic``-0 at ``timestamp``; its one
    partition's answer."""
    module = importlib.import_module(f"kio.schema.list_offsets.v{version}.request")
    fields: dict[str, Any] = {
        "replica_id": BrokerId(-1),
        "isolation_level": i8(0),
        "topics": (
            module.ListOffsetsTopic(
                name=TopicName(topic),
                partitions=(
                    module.ListOffsetsPartition(
                        partition_index=i32(0),
                        current_leader_epoch=i32(-1),
                        timestamp=i64(timestamp),
                    ),
                ),
            ),
        ),
    }
    if version >= 10:
        fields["timeout"] = i32Timedelta.parse(timedelta(seconds=5))
    answer = call(address, module.ListOffsetsRequest(**fields))
    ((partition,),) = (t.partitions for t in answer.topics)
    return partition


@pytest.fixture(scope="module")
def timestamped(kafka_cluster: LocalCluster, bootstrap: str) -> tuple[str, str]:
    """A one-partition topic of three records whose largest timestamp is the middle one's
    (offset 1); the topic and its leader's address."""
    topic = unique("timestamps")
    create_topic(bootstrap, topic, partitions=1)
    produce(
        bootstrap,
        topic,
        [
            {"value": b"a", "timestamp": 1_000},
            {"value": b"b", "timestamp": 5_000},
            {"value": b"c", "timestamp": 3_000},
        ],
    )
    return topic, leader_address(kafka_cluster, topic)


@pytest.mark.parametrize("version", [7, 8, 9, 10])
def test_list_offsets_v7_and_later_answer_the_record_with_the_largest_timestamp(
    timestamped, version
):
    topic, leader = timestamped
    answer = list_offsets(leader, version, topic, MAX_TIMESTAMP)
    assert (int(answer.error_code), int(answer.offset), int(answer.timestamp)) == (0, 1, 5_000)


@pytest.mark.parametrize(
    ("timestamp", "since"), [(MAX_TIMESTAMP, 7), (EARLIEST_LOCAL, 8), (LATEST_TIERED, 9)]
)
def test_a_special_timestamp_below_its_version_is_unsupported_and_served_from_it(
    timestamped, timestamp, since
):
    topic, leader = timestamped
    below = list_offsets(leader, since - 1, topic, timestamp)
    assert int(below.error_code) == UNSUPPORTED_VERSION
    served = list_offsets(leader, since, topic, timestamp)
    assert int(served.error_code) == 0
    # earliest local: the log start offset (no tiered storage); latest tiered: none
    expected = {MAX_TIMESTAMP: 1, EARLIEST_LOCAL: 0, LATEST_TIERED: -1}[timestamp]
    assert int(served.offset) == expected


@pytest.mark.parametrize("version", [6, 10])
def test_flexible_list_offsets_answer_earliest_latest_and_by_time(timestamped, version):
    topic, leader = timestamped
    assert int(list_offsets(leader, version, topic, -2).offset) == 0
    assert int(list_offsets(leader, version, topic, -1).offset) == 3
    by_time = list_offsets(leader, version, topic, 2_000)
    assert (int(by_time.offset), int(by_time.timestamp)) == (1, 5_000)


def test_an_unknown_isolation_level_closes_the_connection_as_kafkas_parser_does(
    kafka_cluster, timestamped
):
    """Found by the fuzzer (bench/kafka_fuzz): the core refused it with an exception, logged
    with its traceback as a handler failure."""
    topic, leader = timestamped
    module = importlib.import_module("kio.schema.list_offsets.v10.request")
    request = module.ListOffsetsRequest(
        replica_id=BrokerId(-1),
        isolation_level=i8(48),
        topics=(
            module.ListOffsetsTopic(
                name=TopicName(topic),
                partitions=(
                    module.ListOffsetsPartition(
                        partition_index=i32(0), current_leader_epoch=i32(-1), timestamp=i64(-1)
                    ),
                ),
            ),
        ),
        timeout=i32Timedelta.parse(timedelta(seconds=5)),
    )
    with pytest.raises((ConnectionError, struct.error, OSError)):
        call(leader, request)
    node = next(n for n in kafka_cluster.nodes if n.kafka_address == leader)
    assert "unknown isolation level" not in node.tail(400)


def test_confluent_kafka_lists_the_max_timestamp_offset(timestamped, bootstrap):
    """librdkafka's ListOffsets admin call (KIP-396) asks for OffsetSpec.max_timestamp() with
    ListOffsets v7, which it sends only when the broker's range reaches it."""
    topic, _ = timestamped
    admin = AdminClient({"bootstrap.servers": bootstrap})
    tp = TopicPartition(topic, 0)
    futures = admin.list_offsets({tp: OffsetSpec.max_timestamp()}, request_timeout=30)
    info = futures[tp].result(timeout=60)
    assert (info.offset, info.timestamp) == (1, 5_000)
    earliest = admin.list_offsets({tp: OffsetSpec.earliest()}, request_timeout=30)[tp]
    latest = admin.list_offsets({tp: OffsetSpec.latest()}, request_timeout=30)[tp]
    assert (earliest.result(timeout=60).offset, latest.result(timeout=60).offset) == (0, 3)


# -- Produce v9-v10, Fetch v12-v16: KIP-951 ------------------------------------------------------


def produce_request(version: int, topic: str, *values: bytes) -> Any:
    module = importlib.import_module(f"kio.schema.produce.v{version}.request")
    batch = build_batch([Record(None, v) for v in values])
    return module.ProduceRequest(
        transactional_id=None,
        acks=i16(-1),
        timeout=i32Timedelta.parse(timedelta(seconds=30)),
        topic_data=(
            module.TopicProduceData(
                name=TopicName(topic),
                partition_data=(module.PartitionProduceData(index=i32(0), records=batch),),
            ),
        ),
    )


def fetch_request(
    version: int, topic: str, topic_id: uuid.UUID, offset: int, last_fetched_epoch: int = -1
) -> Any:
    """A consumer's Fetch of ``version`` for ``topic``-0 (by id from v13) from ``offset``."""
    module = importlib.import_module(f"kio.schema.fetch.v{version}.request")
    partition = module.FetchPartition(
        partition=i32(0),
        current_leader_epoch=i32(-1),
        fetch_offset=i64(offset),
        last_fetched_epoch=i32(last_fetched_epoch),
        log_start_offset=i64(-1),
        partition_max_bytes=i32(1024 * 1024),
    )
    by = {"topic_id": topic_id} if version >= 13 else {"topic": TopicName(topic)}
    fields: dict[str, Any] = {
        "max_wait": i32Timedelta.parse(timedelta(milliseconds=0)),
        "min_bytes": i32(0),
        "max_bytes": i32(50 * 1024 * 1024),
        "isolation_level": i8(0),
        "session_id": i32(0),
        "session_epoch": i32(-1),
        "topics": (module.FetchTopic(partitions=(partition,), **by),),
        "forgotten_topics_data": (),
        "rack_id": "",
    }
    if version < 15:
        fields["replica_id"] = BrokerId(-1)
    return module.FetchRequest(**fields)


@pytest.fixture(scope="module")
def led(kafka_cluster: LocalCluster, bootstrap: str) -> dict[str, Any]:
    """A one-partition, three-replica topic with two records: its id, leader, leader epoch,
    the leader's Kafka address and a follower's."""
    topic = unique("led")
    create_topic(bootstrap, topic, partitions=1)
    produce(bootstrap, topic, [{"value": b"one"}, {"value": b"two"}])
    t, p = partition_metadata(kafka_cluster, topic)
    leader = int(p.leader_id)
    addresses = {n.node_id: n.kafka_address for n in kafka_cluster.nodes}
    follower = next(a for node_id, a in addresses.items() if node_id != leader)
    return {
        "topic": topic,
        "topic_id": t.topic_id,
        "leader": leader,
        "epoch": int(p.leader_epoch),
        "leader_address": addresses[leader],
        "follower_address": follower,
    }


def endpoint(answer: Any) -> list[tuple[int, str]]:
    return [(int(e.node_id), f"{e.host}:{int(e.port)}") for e in answer.node_endpoints]


@pytest.mark.parametrize("version", [9, 10])
def test_produce_to_a_follower_is_refused_and_from_v10_names_the_leader(led, version):
    answer = call(led["follower_address"], produce_request(version, led["topic"], b"x"))
    ((p,),) = (t.partition_responses for t in answer.responses)
    assert int(p.error_code) == NOT_LEADER_OR_FOLLOWER
    if version >= 10:
        leader = p.current_leader
        assert (int(leader.leader_id), int(leader.leader_epoch)) == (led["leader"], led["epoch"])
        # the leader's endpoint on the listener the request came in on: its Kafka listener
        assert endpoint(answer) == [(led["leader"], led["leader_address"])]


@pytest.mark.parametrize("version", [9, 10])
def test_flexible_produce_to_the_leader_appends(led, version):
    answer = call(led["leader_address"], produce_request(version, led["topic"], b"a", b"b"))
    ((p,),) = (t.partition_responses for t in answer.responses)
    assert int(p.error_code) == 0 and int(p.base_offset) >= 2
    if version >= 10:  # nothing to redirect
        assert answer.node_endpoints == ()
        assert int(p.current_leader.leader_id) == -1


@pytest.mark.parametrize("version", [12, 13, 15, 16])
def test_flexible_fetch_reads_the_records_by_name_or_topic_id(led, version):
    answer = call(led["leader_address"], fetch_request(version, led["topic"], led["topic_id"], 0))
    assert int(answer.error_code) == 0
    ((p,),) = (t.partitions for t in answer.responses)
    (t,) = answer.responses
    assert (t.topic_id if version >= 13 else t.topic) == (
        led["topic_id"] if version >= 13 else led["topic"]
    )
    assert int(p.error_code) == 0 and int(p.high_watermark) >= 2
    values = [r.value for b in read_batches(p.records) for r in b.records()]
    assert values[:2] == [b"one", b"two"]


@pytest.mark.parametrize("version", [12, 15, 16])
def test_fetch_from_a_follower_is_refused_and_from_v16_names_the_leader(led, version):
    answer = call(led["follower_address"], fetch_request(version, led["topic"], led["topic_id"], 0))
    ((p,),) = (t.partitions for t in answer.responses)
    assert int(p.error_code) == NOT_LEADER_OR_FOLLOWER
    leader = p.current_leader
    if version >= 16:
        assert (int(leader.leader_id), int(leader.leader_epoch)) == (led["leader"], led["epoch"])
        assert endpoint(answer) == [(led["leader"], led["leader_address"])]
    else:  # the field exists from v12, but Kafka fills it from v16 only
        assert int(leader.leader_id) == -1


def test_fetch_of_an_unknown_topic_id_is_unknown_topic_id(led):
    answer = call(led["leader_address"], fetch_request(16, "", uuid.uuid4(), 0))
    ((p,),) = (t.partitions for t in answer.responses)
    assert int(p.error_code) == UNKNOWN_TOPIC_ID


def test_fetch_v12_answers_a_consumer_whose_log_diverged_with_the_epoch_to_truncate_to(led):
    """A consumer that fetched records of the leader's epoch up to an offset beyond that
    epoch's end (another leader's records, since truncated): the answer names the epoch and
    its end offset, and no records (Kafka's ``readRecords``), instead of OFFSET_OUT_OF_RANGE."""
    beyond = 1000
    answer = call(
        led["leader_address"],
        fetch_request(12, led["topic"], led["topic_id"], beyond, last_fetched_epoch=led["epoch"]),
    )
    ((p,),) = (t.partitions for t in answer.responses)
    assert int(p.error_code) == 0
    assert int(p.diverging_epoch.epoch) == led["epoch"]
    assert int(p.diverging_epoch.end_offset) == int(p.high_watermark) < beyond
    assert not p.records


class _Lines(logging.Handler):
    """librdkafka's log lines (its ``logger``), kept."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def _move_leader(cluster: LocalCluster, topic: str) -> int:
    """Makes the partition's second replica its leader (a reassignment to the same replicas
    in another order, then a preferred election); returns the new leader once the Metadata
    shows it."""
    _, p = partition_metadata(cluster, topic)
    replicas = [int(r) for r in p.replica_nodes]
    reordered = [*replicas[1:], replicas[0]]
    tp = OdradekTopicPartition(topic, 0)
    with Admin(cluster.bootstrap_servers) as admin:
        assert admin.alter_partition_reassignments({tp: reordered}) == {tp: None}
        wait_for(lambda: not admin.list_partition_reassignments([tp]), "the reassignment done")
        assert admin.elect_leaders([tp]) == {tp: None}
    wait_for(
        lambda: int(partition_metadata(cluster, topic)[1].leader_id) == reordered[0],
        "the new leader in the metadata",
    )
    return reordered[0]


def test_librdkafka_follows_the_leader_a_produce_or_fetch_answer_names(kafka_cluster, bootstrap):
    """KIP-951 with a real client: after the leader moves, the producer's next batch and the
    consumer's next fetch reach the old leader, whose NOT_LEADER_OR_FOLLOWER answer names the
    new one; librdkafka (>= 2.4) updates its cache from it ("updated with leader"), without
    waiting for a metadata refresh (none is due: its interval is ten minutes here)."""
    topic = unique("kip951")
    create_topic(bootstrap, topic, partitions=1)
    lines = _Lines()
    logger = logging.getLogger(f"librdkafka.{topic}")
    logger.addHandler(lines)
    logger.setLevel(logging.DEBUG)
    quiet = {"topic.metadata.refresh.interval.ms": 600_000, "debug": "metadata"}
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "linger.ms": 0,
            "enable.idempotence": True,
            "logger": logger,
            **quiet,
        }
    )
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": unique("g"),
            "enable.partition.eof": True,
            "logger": logger,
            **quiet,
        }
    )
    try:
        producer.produce(topic, b"before")
        assert producer.flush(60) == 0
        consumer.assign([TopicPartition(topic, 0, 0)])
        msg = wait_for(lambda: consumer.poll(0.5), "the first record")
        assert msg.error() is None and msg.value() == b"before"
        new_leader = _move_leader(kafka_cluster, topic)
        delivered: list[Any] = []
        producer.produce(topic, b"after", on_delivery=lambda err, m: delivered.append(err or m))
        assert producer.flush(60) == 0
        assert len(delivered) == 1 and delivered[0].error() is None, delivered

        def consumed_after() -> Any:
            m = consumer.poll(0.5)
            err = None if m is None else m.error()
            if m is None or (err is not None and err.code() == KafkaError._PARTITION_EOF):
                return None
            return m

        msg = wait_for(consumed_after, "the record produced after the move")
        assert msg.error() is None and msg.value() == b"after"
    finally:
        consumer.close()
        logger.removeHandler(lines)
    # each client took a leader from an answer: the producer the new one from its refused
    # batch, the consumer the new leader or the reassignment's new epoch of the old one (its
    # fetch at the old epoch is FENCED_LEADER_EPOCH, which names the current epoch)
    for client in ("producer", "consumer"):
        taken = [
            line
            for line in lines.lines
            if f"[rdkafka#{client}" in line and "METADATAUPDATE" in line and "updated with" in line
        ]
        assert taken, [line for line in lines.lines if "METADATAUPDATE" in line]
    assert any(
        "[rdkafka#producer" in line and f"[0]: updated with leader {new_leader} and" in line
        for line in lines.lines
    )


# -- Metadata v13 --------------------------------------------------------------------------------


def test_metadata_v13_answers_with_a_top_level_error_code(kafka_cluster, led):
    module = importlib.import_module("kio.schema.metadata.v13.request")
    answer = call(
        led["follower_address"],
        module.MetadataRequest(
            topics=(module.MetadataRequestTopic(topic_id=None, name=TopicName(led["topic"])),),
            allow_auto_topic_creation=False,
            include_topic_authorized_operations=False,
        ),
    )
    assert int(answer.error_code) == 0
    assert {int(b.node_id) for b in answer.brokers} == {n.node_id for n in kafka_cluster.nodes}
    (t,) = answer.topics
    assert (t.name, t.topic_id) == (led["topic"], led["topic_id"])
    assert int(t.partitions[0].leader_id) == led["leader"]


# -- FindCoordinator v3-v6 ---------------------------------------------------------------------


def find_coordinator(address: str, version: int, keys: list[str], key_type: int = 0) -> Any:
    module = importlib.import_module(f"kio.schema.find_coordinator.v{version}.request")
    if version >= 4:
        request = module.FindCoordinatorRequest(key_type=i8(key_type), coordinator_keys=tuple(keys))
    else:
        (key,) = keys
        request = module.FindCoordinatorRequest(key=key, key_type=i8(key_type))
    return call(address, request)


@pytest.mark.parametrize("version", [4, 5])
def test_find_coordinator_v4_and_later_answer_each_key(kafka_cluster, version):
    addresses = {n.node_id: n.kafka_address for n in kafka_cluster.nodes}
    groups = [unique("g"), unique("g"), ""]
    first = next(iter(addresses.values()))

    def found() -> Any:
        answer = find_coordinator(first, version, groups)
        codes = [int(c.error_code) for c in answer.coordinators]
        return answer if codes[:2] == [0, 0] else None

    # COORDINATOR_NOT_AVAILABLE until __consumer_offsets has its leaders
    answer = wait_for(found, "both groups' coordinators")
    assert [c.key for c in answer.coordinators] == groups
    for c in answer.coordinators[:2]:
        assert f"{c.host}:{int(c.port)}" == addresses[int(c.node_id)]
    assert int(answer.coordinators[2].error_code) == 24  # INVALID_GROUP_ID: an empty id
    # each key answers as it would alone (v3: one key, flexible)
    for c in answer.coordinators[:2]:
        alone = find_coordinator(addresses[int(c.node_id)], 3, [c.key])
        assert (int(alone.error_code), int(alone.node_id)) == (0, int(c.node_id))
    # several transactional ids at once (key type 1)
    txn = find_coordinator(first, version, ["t1", "t2"], key_type=1)
    assert [c.key for c in txn.coordinators] == ["t1", "t2"]


def test_find_coordinator_v6_answers_a_share_partitions_share_coordinator(kafka_cluster):
    """Key type 2 (SHARE, KIP-932): the leader of the key's ``__share_group_state`` partition
    (created by the first lookup); a malformed key, or a share key below v6, INVALID_REQUEST."""
    addresses = {n.node_id: n.kafka_address for n in kafka_cluster.nodes}
    first = next(iter(addresses.values()))
    topic_id = "AQIDBAUGBwgJCgsMDQ4PEA"
    keys = [f"{unique('g')}:{topic_id}:{p}" for p in range(3)] + ["not-a-share-key"]

    def found() -> Any:
        answer = find_coordinator(first, 6, keys, key_type=2)
        return answer if all(int(c.error_code) == 0 for c in answer.coordinators[:3]) else None

    # COORDINATOR_NOT_AVAILABLE until __share_group_state has its leaders
    answer = wait_for(found, "the share partitions' coordinators")
    assert [c.key for c in answer.coordinators] == keys
    for c in answer.coordinators[:3]:
        assert f"{c.host}:{int(c.port)}" == addresses[int(c.node_id)]
    assert int(answer.coordinators[3].error_code) == 42  # INVALID_REQUEST
    # every node names the same coordinators (once its metadata has the new topic)
    expected = [int(c.node_id) for c in answer.coordinators[:3]]
    for address in addresses.values():

        def same(address: str = address) -> bool:
            again = find_coordinator(address, 6, keys[:3], key_type=2)
            return [int(c.node_id) for c in again.coordinators] == expected

        wait_for(same, f"the same share coordinators from {address}")
    below = find_coordinator(first, 5, keys[:1], key_type=2)
    assert [int(c.error_code) for c in below.coordinators] == [42]


# -- CreateTopics v5-v7 ------------------------------------------------------------------------

DYNAMIC_TOPIC_CONFIG, DEFAULT_CONFIG = 1, 5
TOPIC_ALREADY_EXISTS = 36


def create_topics(address: str, version: int, name: str, *, validate_only: bool) -> Any:
    module = importlib.import_module(f"kio.schema.create_topics.v{version}.request")
    topic = module.CreatableTopic(
        name=TopicName(name),
        num_partitions=i32(2),
        replication_factor=i16(3),
        assignments=(),
        configs=(module.CreatableTopicConfig(name="retention.ms", value="123456"),),
    )
    answer = call(
        address,
        module.CreateTopicsRequest(
            topics=(topic,),
            timeout=i32Timedelta.parse(timedelta(seconds=30)),
            validate_only=validate_only,
        ),
    )
    (result,) = answer.topics
    return result


@pytest.mark.parametrize("version", [5, 7])
def test_create_topics_v5_and_later_answer_the_topics_configs_and_v7_its_id(kafka_cluster, version):
    address = kafka_cluster.kafka_bootstrap_servers.split(",")[0]
    name = unique("created")
    checked = create_topics(address, version, name, validate_only=True)
    created = create_topics(address, version, name, validate_only=False)
    for r in (checked, created):
        assert int(r.error_code) == 0, r
        assert (int(r.num_partitions), int(r.replication_factor)) == (2, 3)
        configs = {c.name: (c.value, int(c.config_source)) for c in r.configs}
        assert configs["retention.ms"] == ("123456", DYNAMIC_TOPIC_CONFIG)
        assert configs["cleanup.policy"] == ("delete", DEFAULT_CONFIG)
    if version >= 7:
        assert checked.topic_id in (None, uuid.UUID(int=0))  # nothing created (kio: None)
        wait_for(lambda: partition_metadata(kafka_cluster, name)[0].partitions, "the topic")
        assert created.topic_id == partition_metadata(kafka_cluster, name)[0].topic_id
    again = create_topics(address, version, name, validate_only=False)
    assert int(again.error_code) == TOPIC_ALREADY_EXISTS
    assert (again.configs, int(again.num_partitions)) == ((), -1)


# -- DescribeTopicPartitions v0 ----------------------------------------------------------------

UNKNOWN_TOPIC_OR_PARTITION, INVALID_TOPIC_EXCEPTION, INVALID_REQUEST = 3, 17, 42


def describe_topic_partitions(
    address: str, names: list[str], limit: int, cursor: tuple[str, int] | None = None
) -> Any:
    module = importlib.import_module("kio.schema.describe_topic_partitions.v0.request")
    return call(
        address,
        module.DescribeTopicPartitionsRequest(
            topics=tuple(module.TopicRequest(name=TopicName(n)) for n in names),
            response_partition_limit=i32(limit),
            cursor=None
            if cursor is None
            else module.Cursor(topic_name=TopicName(cursor[0]), partition_index=i32(cursor[1])),
        ),
    )


def test_describe_topic_partitions_pages_through_the_named_topics(kafka_cluster, bootstrap):
    a, b = sorted([unique("pages"), unique("pages")])
    for name in (a, b):
        create_topic(bootstrap, name, partitions=3)
    address = kafka_cluster.kafka_bootstrap_servers.split(",")[0]
    names = [b, a, "missing-" + a, "bad/name"]  # answered in name order, the unknown ones too

    def pages() -> list[list[tuple[str, int, list[int]]]]:
        out, cursor = [], None
        while True:
            answer = describe_topic_partitions(address, names, 2, cursor)
            out.append(
                [
                    (t.name, int(t.error_code), [int(p.partition_index) for p in t.partitions])
                    for t in answer.topics
                ]
            )
            if answer.next_cursor is None:
                return out
            cursor = (answer.next_cursor.topic_name, int(answer.next_cursor.partition_index))

    # "bad/name" < "missing-..." < "pages-...": the unknown ones take none of the page
    assert pages() == [
        [("bad/name", INVALID_TOPIC_EXCEPTION, []), ("missing-" + a, 3, []), (a, 0, [0, 1])],
        [(a, 0, [2]), (b, 0, [0])],
        [(b, 0, [1, 2])],
    ]
    # the partitions are Metadata's: leader, epoch, replicas, ISR; the topic's id
    whole = describe_topic_partitions(address, [a], 100)
    (t,) = whole.topics
    meta, _ = partition_metadata(kafka_cluster, a)
    assert t.topic_id == meta.topic_id and t.topic_authorized_operations != -(2**31)
    assert [
        (int(p.leader_id), int(p.leader_epoch), list(p.replica_nodes), list(p.isr_nodes))
        for p in t.partitions
    ] == [
        (int(p.leader_id), int(p.leader_epoch), list(p.replica_nodes), list(p.isr_nodes))
        for p in meta.partitions
    ]
    # a cursor on a topic not named: INVALID_REQUEST for every topic named
    refused = describe_topic_partitions(address, [a], 100, cursor=(b, 0))
    assert [(t.name, int(t.error_code)) for t in refused.topics] == [(a, INVALID_REQUEST)]


# -- OffsetCommit v10, OffsetFetch v10: topic ids (KIP-848, Kafka 4.2) -------------------------


def offset_fetch(
    address: str, version: int, group: str, topics: list[tuple[str | uuid.UUID, int]] | None
) -> Any:
    """One group's OffsetFetch of ``version`` (v8+: ``topics`` as (name or, v10, id,
    partition); ``None``: all); the group's answer."""
    module = importlib.import_module(f"kio.schema.offset_fetch.v{version}.request")
    asked = None
    if topics is not None:
        asked = tuple(
            module.OffsetFetchRequestTopics(
                **({"topic_id": t} if version >= 10 else {"name": TopicName(str(t))}),
                partition_indexes=(i32(p),),
            )
            for t, p in topics
        )
    answer = call(
        address,
        module.OffsetFetchRequest(
            groups=(module.OffsetFetchRequestGroup(group_id=GroupId(group), topics=asked),),
            require_stable=False,
        ),
    )
    (g,) = answer.groups
    return g


def fetched(group: Any, by_id: bool) -> list[tuple[Any, int, int, int]]:
    """(topic name or id, partition, offset, error) of an OffsetFetch group's answer."""
    return [
        (
            t.topic_id if by_id else t.name,
            int(p.partition_index),
            int(p.committed_offset),
            int(p.error_code),
        )
        for t in group.topics
        for p in t.partitions
    ]


def test_offset_commit_and_fetch_v10_name_topics_by_id(kafka_cluster, led):
    """Kafka 4.2's OffsetCommit v10 and OffsetFetch v10 carry a topic's id instead of its name,
    in the request and the answer; an id the node does not know is UNKNOWN_TOPIC_ID (100) for
    its partitions, as Kafka's KafkaApis answers before its coordinator sees them. What v10
    commits, v9 reads by name, and the other way round. Before, v10 was not served (the
    advertised range ended at v9: UNSUPPORTED_VERSION)."""
    group = unique("g10")
    address = coordinator_of(kafka_cluster, group)
    topic, topic_id, stranger = led["topic"], led["topic_id"], uuid.uuid4()

    committed = offset_commit(address, 10, group, topic_id, 2, 0)
    assert [
        (t.topic_id, [(int(p.partition_index), int(p.error_code)) for p in t.partitions])
        for t in committed.topics
    ] == [(topic_id, [(0, 0)])]
    unknown = offset_commit(address, 10, group, stranger, 1, 0, 1)
    assert [
        (t.topic_id, [(int(p.partition_index), int(p.error_code)) for p in t.partitions])
        for t in unknown.topics
    ] == [(stranger, [(0, UNKNOWN_TOPIC_ID), (1, UNKNOWN_TOPIC_ID)])]

    # by id, by name, and all the group's topics (by id from v10)
    asked = offset_fetch(address, 10, group, [(topic_id, 0), (stranger, 0)])
    assert int(asked.error_code) == 0
    assert fetched(asked, True) == [(topic_id, 0, 2, 0), (stranger, 0, -1, UNKNOWN_TOPIC_ID)]
    assert fetched(offset_fetch(address, 9, group, [(topic, 0)]), False) == [(topic, 0, 2, 0)]
    assert fetched(offset_fetch(address, 10, group, None), True) == [(topic_id, 0, 2, 0)]

    # v9 commits by name, v10 reads it by id
    assert (
        int(offset_commit(address, 9, group, topic, 5, 0).topics[0].partitions[0].error_code) == 0
    )
    (p,) = offset_fetch(address, 10, group, [(topic_id, 0)]).topics[0].partitions
    assert (int(p.committed_offset), p.metadata) == (5, "at 5")


def test_a_kip848_confluent_kafka_consumer_still_commits_and_fetches_with_v9(bootstrap):
    """Whether confluent-kafka uses v10: librdkafka 2.16 with ``group.protocol=consumer``
    subscribes, reads, commits and reads its commit back with v10 advertised, and its protocol
    log shows it sends OffsetCommit v9 and OffsetFetch v9 (it names topics by id in
    ConsumerGroupHeartbeat only): v10 is tested by raw frames above."""
    topic, group = unique("v10client"), unique("g10client")
    create_topic(bootstrap, topic, partitions=1)
    produce(bootstrap, topic, [{"value": f"r{i}".encode()} for i in range(4)])
    lines = _Lines()
    logger = logging.getLogger(f"librdkafka.{topic}")
    logger.addHandler(lines)
    logger.setLevel(logging.DEBUG)
    consumer = kip848(bootstrap, group, debug="protocol", logger=logger)
    try:
        consumer.subscribe([topic])
        got: list[Any] = []

        def two() -> bool:
            msg = consumer.poll(0.2)
            if msg is not None and msg.error() is None:
                got.append(msg)
            return len(got) >= 2

        wait_for(two, "two records")
        consumer.commit(message=got[1], asynchronous=False)
        (tp,) = consumer.committed([TopicPartition(topic, 0)], timeout=30)
        assert tp.offset == int(got[1].offset()) + 1
    finally:
        consumer.close()
        logger.removeHandler(lines)
    sent = sorted(
        {line.split("Sent ")[1].split(",")[0] for line in lines.lines if "Sent Offset" in line}
    )
    assert sent == ["OffsetCommitRequest (v9", "OffsetFetchRequest (v9"]
