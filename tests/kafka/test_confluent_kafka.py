"""confluent-kafka (librdkafka 2.x) against a real odradek cluster's Kafka listeners: metadata,
topics through its admin API, produce with every codec, acks and idempotence, records with keys,
headers, null values and 1 MiB values, a batch too large for the topic, consumption by assign
from earliest, latest and a timestamp; and what one door writes the other reads byte for byte."""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from odradek import Consumer as OdradekConsumer
from odradek import Producer as OdradekProducer
from odradek import TopicPartition as OdradekTopicPartition

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]


def unique(name: str) -> str:
    return f"{name}-{uuid.uuid4().hex[:8]}"


def create_topic(bootstrap: str, name: str, partitions: int = 3, **configs: str) -> None:
    """Creates ``name`` (three replicas) with confluent-kafka's AdminClient through the Kafka
    door, and waits until its Metadata shows a leader for every partition."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    created = admin.create_topics(
        [NewTopic(name, num_partitions=partitions, replication_factor=3, config=dict(configs))],
        operation_timeout=30,
    )
    created[name].result(timeout=60)
    deadline = time.monotonic() + 60  # noqa: TID251
    while time.monotonic() < deadline:  # noqa: TID251
        md = admin.list_topics(name, timeout=10).topics[name]
        if (
            md.error is None
            and len(md.partitions) == partitions
            and all(p.leader >= 0 for p in md.partitions.values())
        ):
            return
        time.sleep(0.1)
    raise AssertionError(f"{name} has no leaders after 60 s")


def produce(
    bootstrap: str, topic: str, records: list[dict[str, Any]], **config: object
) -> list[Any]:
    """Produces ``records`` (kwargs of ``Producer.produce``) and returns the delivery reports'
    messages, failing on any delivery error."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, **config})
    delivered: list[Any] = []
    errors: list[Any] = []

    def report(err, msg):
        (errors if err is not None else delivered).append(err or msg)

    for record in records:
        producer.produce(topic, on_delivery=report, **record)
    remaining = producer.flush(60)
    assert remaining == 0, f"{remaining} records not delivered"
    assert not errors, errors
    return delivered


def consume(bootstrap: str, assignments: list[TopicPartition], count: int) -> list[Any]:
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": unique("g"), "enable.auto.commit": False}
    )
    consumer.assign(assignments)
    out: list[Any] = []
    deadline = time.monotonic() + 60  # noqa: TID251
    try:
        while len(out) < count and time.monotonic() < deadline:  # noqa: TID251
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            error = msg.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    continue
                raise KafkaException(error)
            out.append(msg)
    finally:
        consumer.close()
    assert len(out) == count, f"consumed {len(out)} of {count}"
    return out


def test_metadata_lists_the_three_brokers_on_their_kafka_listeners(kafka_cluster, bootstrap):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    md = admin.list_topics(timeout=30)
    assert sorted(md.brokers) == [0, 1, 2]
    advertised = {f"{b.host}:{b.port}" for b in md.brokers.values()}
    assert advertised == {n.kafka_address for n in kafka_cluster.nodes}
    assert md.controller_id in (0, 1, 2)
    assert md.cluster_id


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("idempotent", [True, False])
def test_produce_and_consume_with_every_codec(bootstrap, codec, idempotent):
    topic = unique(f"codec-{codec}")
    create_topic(bootstrap, topic, partitions=1)
    values = [f"{codec} record {i} ".encode() * 20 for i in range(500)]
    delivered = produce(
        bootstrap,
        topic,
        [{"value": v, "key": str(i).encode()} for i, v in enumerate(values)],
        **{"compression.type": codec, "enable.idempotence": idempotent, "acks": "all"},
    )
    assert sorted(m.offset() for m in delivered) == list(range(500))
    got = consume(bootstrap, [TopicPartition(topic, 0, 0)], 500)
    assert [m.value() for m in got] == values
    assert [m.key() for m in got] == [str(i).encode() for i in range(500)]


@pytest.mark.parametrize("acks", ["0", "1", "all"])
def test_every_acks_setting_is_stored(bootstrap, acks):
    topic = unique(f"acks-{acks}")
    create_topic(bootstrap, topic, partitions=1)
    produce(
        bootstrap,
        topic,
        [{"value": f"v{i}".encode()} for i in range(100)],
        **{"acks": acks, "enable.idempotence": False},
    )
    got = consume(bootstrap, [TopicPartition(topic, 0, 0)], 100)
    assert [m.value() for m in got] == [f"v{i}".encode() for i in range(100)]


@pytest.mark.parametrize("configs", [{"segment.bytes": "16384"}, {"flush.messages": "40"}])
def test_appends_that_roll_or_flush_keep_every_record_in_order(kafka_cluster, bootstrap, configs):
    """The door appends on its event loop, and hands an append that would roll a segment or
    flush (``flush.messages``) to a request thread before it reads the connection's next
    request: an idempotent producer's pipelined batches across dozens of rolls, or a flush
    every few batches, all land once and in order."""
    topic = unique("rolls")
    create_topic(bootstrap, topic, partitions=1, **configs)
    values = [f"{i:06d} ".encode() * 30 for i in range(3000)]
    delivered = produce(
        bootstrap,
        topic,
        [{"value": v, "partition": 0} for v in values],
        **{"enable.idempotence": True, "acks": "all", "batch.size": 4096},
    )
    assert sorted(m.offset() for m in delivered) == list(range(3000))
    got = consume(bootstrap, [TopicPartition(topic, 0, 0)], 3000)
    assert [(m.offset(), m.value()) for m in got] == list(enumerate(values))
    if "segment.bytes" in configs:  # the rolls happened, on every replica
        for node in kafka_cluster.nodes:
            segments = list((node.directory / "data" / f"{topic}-0").glob("*.log"))
            assert len(segments) > 20, (node.node_id, len(segments))


def test_keys_headers_null_values_and_one_mib_values_round_trip(bootstrap):
    topic = unique("shapes")
    # a 1 MiB record is over Kafka's default max.message.bytes (1048588) with its batch's
    # overhead, as on Kafka: the topic allows 2 MiB
    create_topic(bootstrap, topic, partitions=1, **{"max.message.bytes": "2097152"})
    big = bytes(range(256)) * 4096  # 1 MiB
    records: list[dict[str, Any]] = [
        {"key": b"k1", "value": b"v1", "headers": [("h1", b"a"), ("h2", None), ("h1", b"b")]},
        {"key": None, "value": None},
        {"key": b"big", "value": big},
        {"key": b"", "value": b""},
    ]
    produce(bootstrap, topic, records, **{"message.max.bytes": 2 * 1024 * 1024})
    got = consume(bootstrap, [TopicPartition(topic, 0, 0)], 4)
    assert got[0].key() == b"k1" and got[0].value() == b"v1"
    assert got[0].headers() == [("h1", b"a"), ("h2", None), ("h1", b"b")]
    assert got[1].key() is None and got[1].value() is None
    assert got[2].value() == big
    assert got[3].key() == b"" and got[3].value() == b""


def test_a_batch_over_the_topics_limit_is_refused_with_kafkas_error(bootstrap):
    topic = unique("small")
    create_topic(bootstrap, topic, partitions=1, **{"max.message.bytes": "1000"})
    producer = Producer({"bootstrap.servers": bootstrap, "compression.type": "none"})
    errors: list[Any] = []
    producer.produce(topic, value=b"x" * 5000, on_delivery=lambda err, msg: errors.append(err))
    producer.flush(60)
    assert len(errors) == 1 and errors[0] is not None
    assert errors[0].code() == KafkaError.MSG_SIZE_TOO_LARGE


def test_consume_by_assign_from_earliest_latest_and_a_timestamp(bootstrap):
    topic = unique("positions")
    create_topic(bootstrap, topic, partitions=1)
    first = produce(bootstrap, topic, [{"value": f"a{i}".encode()} for i in range(50)])
    middle_ts = int(time.time() * 1000) + 1  # noqa: TID251
    time.sleep(0.05)
    produce(bootstrap, topic, [{"value": f"b{i}".encode()} for i in range(50)])
    assert len(first) == 50
    earliest = consume(bootstrap, [TopicPartition(topic, 0, -2)], 100)  # OFFSET_BEGINNING
    assert [m.offset() for m in earliest] == list(range(100))
    # by timestamp: the first record at or after it
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": unique("g")})
    (found,) = consumer.offsets_for_times([TopicPartition(topic, 0, middle_ts)], timeout=30)
    consumer.close()
    assert found.offset == 50
    by_time = consume(bootstrap, [TopicPartition(topic, 0, found.offset)], 50)
    assert by_time[0].value() == b"b0"
    # latest: only what comes after the assignment
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": unique("g")})
    consumer.assign([TopicPartition(topic, 0, -1)])  # OFFSET_END
    low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=30)
    assert (low, high) == (0, 100)
    consumer.poll(1.0)
    produce(bootstrap, topic, [{"value": b"late"}])
    late = None
    deadline = time.monotonic() + 30  # noqa: TID251
    while late is None and time.monotonic() < deadline:  # noqa: TID251
        msg = consumer.poll(0.5)
        if msg is not None and msg.error() is None:
            late = msg
    consumer.close()
    assert late is not None and late.value() == b"late" and late.offset() == 100


def test_what_one_door_writes_the_other_reads_byte_for_byte(kafka_cluster, bootstrap):
    topic = unique("doors")
    create_topic(bootstrap, topic, partitions=1)
    produce(
        bootstrap,
        topic,
        [
            {
                "key": b"from-kafka",
                "value": b"1",
                "headers": [("door", b"kafka")],
                "timestamp": 1_700_000_000_123,
            },
            {"key": None, "value": b"2"},
        ],
    )
    with OdradekProducer(kafka_cluster.bootstrap_servers) as producer:
        producer.send(
            topic,
            b"3",
            key=b"from-grpc",
            headers=[("door", b"grpc")],
            timestamp_ms=1_700_000_000_456,
        ).result()
    kafka_side = consume(bootstrap, [TopicPartition(topic, 0, 0)], 3)
    with OdradekConsumer(kafka_cluster.bootstrap_servers) as consumer:
        consumer.assign([OdradekTopicPartition(topic, 0)])
        grpc_side: list[Any] = []
        deadline = time.monotonic() + 30  # noqa: TID251
        while len(grpc_side) < 3 and time.monotonic() < deadline:  # noqa: TID251
            grpc_side.extend(consumer.poll(timeout_ms=500))
    assert [(m.offset(), m.key(), m.value(), m.timestamp()[1]) for m in kafka_side] == [
        (r.offset, r.key, r.value, r.timestamp) for r in grpc_side
    ]
    assert kafka_side[0].headers() == [("door", b"kafka")]
    assert kafka_side[2].headers() == [("door", b"grpc")]
    assert [tuple(h) for h in grpc_side[0].headers] == [("door", b"kafka")]
    assert kafka_side[0].timestamp()[1] == 1_700_000_000_123
    assert kafka_side[2].timestamp()[1] == 1_700_000_000_456


def test_delete_records_moves_the_log_start_for_every_client(bootstrap):
    topic = unique("trim")
    create_topic(bootstrap, topic, partitions=1)
    produce(bootstrap, topic, [{"value": f"r{i}".encode()} for i in range(20)])
    admin = AdminClient({"bootstrap.servers": bootstrap})
    (deleted,) = admin.delete_records([TopicPartition(topic, 0, 12)]).values()
    assert deleted.result(timeout=30).low_watermark == 12
    # consumers reading from the beginning now start at 12
    assert [m.offset() for m in consume(bootstrap, [TopicPartition(topic, 0, -2)], 8)] == list(
        range(12, 20)
    )
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": unique("g")})
    assert consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=30) == (12, 20)
    consumer.close()
