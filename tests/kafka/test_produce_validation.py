"""The leader's validation of produced batches, as Kafka clients and odradek's SDK see it on a
real cluster: a batch holding records without a key for a compacted topic is refused whole
with INVALID_RECORD (one whose record is out of the topic's timestamp range with
INVALID_TIMESTAMP), its answer naming each record at fault by its index in the batch (Produce
v8's ``record_errors``, KIP-467) — what librdkafka turns into per-message errors, and the SDK
into a typed error per record."""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

import pytest
from confluent_kafka import KafkaError, Producer
from kio.schema.produce.v8.request import PartitionProduceData, ProduceRequest, TopicProduceData
from kio.schema.types import TopicName
from kio.static.primitive import Records, i16, i32, i32Timedelta

from bench.kafka import kafka_leader
from deploy.local.cluster import LocalCluster
from odradek import Producer as OdradekProducer
from odradek.client.errors import InvalidDifferentRecordError
from odradek.errors import InvalidRecordError, RecordError
from odradek.records import Record, build_batch
from tests.kafka.conftest import call
from tests.kafka.test_confluent_kafka import create_topic, unique


def keyless_error(topic: str) -> str:
    return f"Compacted topic cannot accept message without key in topic partition {topic}-0"


def kafka_summary(topic: str, indices: list[int]) -> str:
    """Kafka's partition error message for ``indices`` keyless records (the first three)."""
    shown = ", ".join(
        f"RecordError(batchIndex={i}, message='{keyless_error(topic)}')" for i in indices[:3]
    )
    return (
        f"One or more records have been rejected due to {len(indices)} record errors in total, "
        f"and only showing the first three errors at most: [{shown}]"
    )


def test_produce_v8_names_each_keyless_record_of_a_batch_for_a_compacted_topic(
    kafka_cluster: LocalCluster, bootstrap: str
) -> None:
    topic = unique("compacted-raw")
    create_topic(bootstrap, topic, partitions=1, **{"cleanup.policy": "compact"})
    keys = [b"a", None, b"c", None, b"e"]
    batch = build_batch([Record(k, b"v") for k in keys])
    partition = _produce_v8(kafka_cluster, topic, batch)
    assert int(partition.error_code) == 87  # INVALID_RECORD
    assert int(partition.base_offset) == -1
    assert [(int(e.batch_index), e.batch_index_error_message) for e in partition.record_errors] == [
        (1, keyless_error(topic)),
        (3, keyless_error(topic)),
    ]
    assert partition.error_message == kafka_summary(topic, [1, 3])


def test_produce_v8_names_each_record_out_of_the_topics_timestamp_range(
    kafka_cluster: LocalCluster, bootstrap: str
) -> None:
    """message.timestamp.before.max.ms: a record older than the limit refuses its batch with
    INVALID_TIMESTAMP (32), the record named (Kafka's LogValidator.validateTimestamp)."""
    topic = unique("timestamps")
    create_topic(bootstrap, topic, partitions=1, **{"message.timestamp.before.max.ms": "3600000"})
    now_ms = time.time_ns() // 1_000_000  # noqa: TID251 - a record the broker's clock takes
    times = [now_ms, 1_000, now_ms]
    batch = build_batch([Record(b"k", b"v", timestamp=t) for t in times])
    partition = _produce_v8(kafka_cluster, topic, batch)
    assert int(partition.error_code) == 32  # INVALID_TIMESTAMP
    assert partition.error_message == (
        "One or more records have been rejected due to invalid timestamp"
    )
    (error,) = partition.record_errors
    assert int(error.batch_index) == 1
    assert error.batch_index_error_message.startswith(
        "Timestamp 1000 of message with offset 1 is out of range. The timestamp should be within ["
    )


def _produce_v8(cluster: LocalCluster, topic: str, batch: bytes) -> Any:
    """Produce v8 of ``batch`` to ``topic`` partition 0 on its leader: the partition's answer."""
    answer = call(
        kafka_leader(cluster, topic),
        ProduceRequest(
            transactional_id=None,
            acks=i16(-1),
            timeout=i32Timedelta.parse(timedelta(seconds=30)),
            topic_data=(
                TopicProduceData(
                    name=TopicName(topic),
                    partition_data=(PartitionProduceData(index=i32(0), records=Records(batch)),),
                ),
            ),
        ),
    )
    return answer.responses[0].partition_responses[0]


@pytest.mark.parametrize("keyless", [[1], [0, 2, 3]])
def test_librdkafka_fails_the_keyless_records_and_the_others_as_different_records(
    bootstrap: str, keyless: list[int]
) -> None:
    """What librdkafka 2.x does with the answer's record errors (KIP-467): with several, each
    record named fails with INVALID_RECORD and the batch's others with
    _INVALID_DIFFERENT_RECORD; with one, every record of the batch fails with the partition's
    INVALID_RECORD (it cannot tell them apart by code). Nothing is stored either way."""
    topic = unique("compacted-rdkafka")
    create_topic(bootstrap, topic, partitions=1, **{"cleanup.policy": "compact"})
    producer = Producer(
        {"bootstrap.servers": bootstrap, "linger.ms": 1000, "enable.idempotence": False}
    )
    reports: dict[int, Any] = {}

    def report(index: int) -> Any:
        return lambda err, msg: reports.__setitem__(index, err)

    for i in range(5):
        key = None if i in keyless else f"k{i}".encode()
        producer.produce(topic, value=b"v", key=key, partition=0, on_delivery=report(i))
    assert producer.flush(60) == 0
    codes = {i: err.code() if err is not None else None for i, err in sorted(reports.items())}
    if len(keyless) == 1:
        assert codes == dict.fromkeys(range(5), KafkaError.INVALID_RECORD)
    else:
        assert codes == {
            i: KafkaError.INVALID_RECORD if i in keyless else KafkaError._INVALID_DIFFERENT_RECORD
            for i in range(5)
        }


def test_the_sdk_fails_the_keyless_records_with_their_own_error(
    kafka_cluster: LocalCluster, bootstrap: str
) -> None:
    """Through gRPC: the answer's record errors reach the SDK, which fails each keyless record
    with INVALID_RECORD naming it and the batch's other records with
    InvalidDifferentRecordError; both carry the batch's record errors."""
    topic = unique("compacted-sdk")
    create_topic(bootstrap, topic, partitions=1, **{"cleanup.policy": "compact"})
    with OdradekProducer(kafka_cluster.bootstrap_servers, linger_ms=60_000) as producer:
        futures = [
            producer.send(topic, b"v", key=None if i in (1, 2) else b"k", partition=0)
            for i in range(4)
        ]
        producer.flush()
    named = tuple(RecordError(i, keyless_error(topic)) for i in (1, 2))
    for i, future in enumerate(futures):
        error = future.exception(timeout=60)
        if i in (1, 2):
            assert isinstance(error, InvalidRecordError), (i, error)
            assert error.message == f"{topic}-0: {keyless_error(topic)}"
        else:
            assert isinstance(error, InvalidDifferentRecordError), (i, error)
            assert "at 1, 2 in the batch" in error.message
        assert error.record_errors == named
        with pytest.raises(type(error)):
            future.result(timeout=0)


def test_the_sdks_send_many_names_the_keyless_records_by_their_index_in_the_call(
    kafka_cluster: LocalCluster, bootstrap: str
) -> None:
    topic = unique("compacted-many")
    create_topic(bootstrap, topic, partitions=1, **{"cleanup.policy": "compact"})
    keys = [b"a", None, b"c", b"d", None]
    with OdradekProducer(kafka_cluster.bootstrap_servers) as producer:
        future = producer.send_many(topic, [b"v"] * len(keys), keys, partition=0)
        errors = future.errors(timeout=60)
    assert sorted(errors) == list(range(len(keys)))
    assert [type(errors[i]) for i in range(len(keys))] == [
        InvalidDifferentRecordError,
        InvalidRecordError,
        InvalidDifferentRecordError,
        InvalidDifferentRecordError,
        InvalidRecordError,
    ]
    with pytest.raises(InvalidRecordError):
        future.result(timeout=0)
