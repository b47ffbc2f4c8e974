"""Kafka's current protocol versions on the Kafka door, each new version by raw frames (kio's
types for exactly that version, on a socket) and by the real client that sends it, against a
real three-node cluster: ListOffsets v6-v10 (flexible; the max-timestamp offset, KIP-734; the
earliest local offset, KIP-405; the latest tiered offset, KIP-1005; v10's timeout, KIP-1075)."""

from __future__ import annotations

import importlib
from datetime import timedelta
from typing import Any

import pytest
from confluent_kafka import TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec  # type: ignore[attr-defined]
from kio.schema.metadata.v1.request import MetadataRequest, MetadataRequestTopic
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import i8, i32, i32Timedelta, i64

from deploy.local.cluster import LocalCluster
from tests.kafka.conftest import call
from tests.kafka.test_confluent_kafka import create_topic, produce, unique

UNSUPPORTED_VERSION = 35
MAX_TIMESTAMP, EARLIEST_LOCAL, LATEST_TIERED = -3, -4, -5


def leader_address(cluster: LocalCluster, topic: str, partition: int = 0) -> str:
    """The Kafka address of ``topic``-``partition``'s leader, by a raw Metadata v1."""
    answer = call(
        cluster.kafka_bootstrap_servers.split(",")[0],
        MetadataRequest(topics=(MetadataRequestTopic(name=TopicName(topic)),)),
    )
    (t,) = answer.topics
    leader = next(int(p.leader_id) for p in t.partitions if int(p.partition_index) == partition)
    return next(n.kafka_address for n in cluster.nodes if n.node_id == leader)


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
