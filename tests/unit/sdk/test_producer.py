"""The producer against in-process gRPC nodes (fake_cluster.py) whose answers tests script:
partitioning, batching per leader, retries with metadata refresh after leader moves, fencing,
unreachable nodes, non-retriable failures, acks, compression, ordering, flush and close."""

from __future__ import annotations

import random
import threading
from typing import Any

import grpc
import pytest

from odradek import Producer, RecordMetadata, TopicPartition
from odradek.client.errors import BufferExhaustedError, NetworkError, ProducerClosedError
from odradek.errors import (
    MessageTooLargeError,
    NotEnoughReplicasError,
    RequestTimedOutError,
    UnknownTopicOrPartitionError,
)
from odradek.partitioner import DefaultPartitioner, partition_for_key
from odradek.records import Compression, read_batches
from tests.unit.sdk.fake_cluster import FakeCluster

T0 = TopicPartition("t", 0)


def make_producer(cluster: FakeCluster, **overrides) -> Producer:
    settings: dict[str, Any] = {
        "linger_ms": 0,
        "retry_backoff_ms": 10,
        "retry_backoff_max_ms": 40,
        "request_timeout_ms": 3000,
        "delivery_timeout_ms": 60_000,
        "max_block_ms": 5000,
    }
    settings.update(overrides)
    return Producer(cluster.bootstrap, **settings)


def produce_targets(cluster: FakeCluster) -> list[tuple[int, list[TopicPartition]]]:
    """(node, partitions) of every Produce call so far."""
    return [
        (node, [TopicPartition(p.topic, p.partition) for p in req.partitions])
        for node, req in cluster.calls_of("Produce")
    ]


def test_send_returns_offsets_and_the_records_reach_the_leader(cluster):
    cluster.create_topic("t", 1, leaders=[2])
    with make_producer(cluster) as producer:
        futures = [
            producer.send("t", b"v%d" % i, key=b"k", headers=[("h", b"x")], timestamp_ms=1000 + i)
            for i in range(3)
        ]
        producer.flush(timeout=10)
        results = [f.result() for f in futures]
    assert results == [RecordMetadata("t", 0, i, 1000 + i) for i in range(3)]
    stored = cluster.records(T0)
    assert [(r.offset, r.key, r.value, r.headers, r.timestamp) for r in stored] == [
        (i, b"k", b"v%d" % i, (("h", b"x"),), 1000 + i) for i in range(3)
    ]
    assert {node for node, _ in produce_targets(cluster)} == {2}


def test_keyed_records_land_on_kafkas_partition_and_each_leader_gets_one_request(cluster):
    cluster.create_topic("t", 6)  # leaders 1, 2, 3, 1, 2, 3
    keys = [b"key-%d" % i for i in range(60)]
    with make_producer(cluster, linger_ms=5000) as producer:
        futures = {key: producer.send("t", key, key=key) for key in keys}
        producer.flush(timeout=10)
    for key, future in futures.items():
        assert future.result().partition == partition_for_key(key, 6)
    for p in range(6):
        stored = cluster.records(TopicPartition("t", p))
        assert all(partition_for_key(r.key or b"", 6) == p for r in stored)
    # Lingering, then one flush: one request per leader, holding all of its partitions.
    targets = produce_targets(cluster)
    assert sorted(node for node, _ in targets) == [1, 2, 3]
    for node, partitions in targets:
        expected = {TopicPartition("t", p) for p in range(6) if p % 3 == node - 1}
        assert set(partitions) == expected & {
            TopicPartition("t", f.result().partition) for f in futures.values()
        }


def test_unkeyed_records_of_one_batch_share_a_partition(cluster):
    cluster.create_topic("t", 4)
    with make_producer(
        cluster, linger_ms=5000, partitioner=DefaultPartitioner(random.Random(1))
    ) as producer:
        futures = [producer.send("t", b"%d" % i) for i in range(20)]
        producer.flush(timeout=10)
    assert len({f.result().partition for f in futures}) == 1
    assert [f.result().offset for f in futures] == list(range(20))


def test_unkeyed_records_move_to_another_partition_when_a_batch_fills(cluster):
    cluster.create_topic("t", 4)
    with make_producer(
        cluster, linger_ms=5000, batch_size=200, partitioner=DefaultPartitioner(random.Random(2))
    ) as producer:
        futures = [producer.send("t", b"x" * 50) for _ in range(12)]
        producer.flush(timeout=10)
    partitions = [f.result().partition for f in futures]
    runs = [p for i, p in enumerate(partitions) if i == 0 or partitions[i - 1] != p]
    assert len(runs) > 1  # switched partitions ...
    assert all(partitions.count(p) <= 3 * runs.count(p) for p in set(partitions))  # ... by batch


def test_leader_move_is_followed_after_not_leader_or_follower(cluster):
    cluster.create_topic("t", 1, leaders=[1])
    with make_producer(cluster) as producer:
        assert producer.partitions_for("t") == [0]  # the producer now believes node 1 leads
        cluster.set_leader(T0, 2)
        metadata_before = len(cluster.calls_of("Metadata"))
        result = producer.send("t", b"moved").result(timeout=10)
    assert result.offset == 0
    assert [node for node, _ in produce_targets(cluster)] == [1, 2]
    assert len(cluster.calls_of("Metadata")) > metadata_before
    _, second = cluster.calls_of("Produce")[1]
    assert second.partitions[0].current_leader_epoch == 1
    assert [r.value for r in cluster.records(T0)] == [b"moved"]


def test_a_stale_leader_epoch_is_fenced_and_refreshed(cluster):
    cluster.create_topic("t", 1, leaders=[1])
    with make_producer(cluster) as producer:
        producer.partitions_for("t")
        cluster.set_leader(T0, 1)  # same leader, new epoch
        assert producer.send("t", b"x").result(timeout=10).offset == 0
    epochs = [req.partitions[0].current_leader_epoch for _, req in cluster.calls_of("Produce")]
    assert epochs == [0, 1]


def test_retriable_errors_are_retried_until_success(cluster):
    cluster.create_topic("t", 1)
    cluster.fail("Produce", NotEnoughReplicasError.code, tp=T0, times=2)
    with make_producer(cluster) as producer:
        assert producer.send("t", b"x").result(timeout=10).offset == 0
    assert len(cluster.calls_of("Produce")) == 3
    assert [r.value for r in cluster.records(T0)] == [b"x"]


def test_non_retriable_error_fails_the_future_with_the_typed_error(cluster):
    cluster.create_topic("t", 1)
    cluster.fail("Produce", MessageTooLargeError.code, tp=T0)
    with make_producer(cluster) as producer:
        future = producer.send("t", b"x")
        error = future.exception(timeout=10)
    assert isinstance(error, MessageTooLargeError)
    assert error.code == 10 and "t-0" in error.message
    assert len(cluster.calls_of("Produce")) == 1
    assert cluster.records(T0) == []


def test_retries_are_bounded(cluster):
    cluster.create_topic("t", 1)
    cluster.fail("Produce", NotEnoughReplicasError.code, tp=T0, times=10)
    with make_producer(cluster, retries=2) as producer:
        error = producer.send("t", b"x").exception(timeout=10)
    assert isinstance(error, NotEnoughReplicasError)
    assert "gave up after 3 attempts: retries exhausted" in error.message
    assert len(cluster.calls_of("Produce")) == 3


def test_delivery_timeout_bounds_retries(cluster):
    cluster.create_topic("t", 1)
    cluster.fail("Produce", NotEnoughReplicasError.code, tp=T0, times=10_000)
    with make_producer(
        cluster, request_timeout_ms=100, delivery_timeout_ms=300, retry_backoff_max_ms=20
    ) as producer:
        error = producer.send("t", b"x").exception(timeout=10)
    assert isinstance(error, NotEnoughReplicasError | RequestTimedOutError)
    assert "delivery_timeout_ms" in error.message


def test_an_unreachable_leader_is_retried_at_the_new_one(cluster):
    cluster.create_topic("t", 1, leaders=[1])
    with make_producer(cluster) as producer:
        producer.partitions_for("t")
        cluster.stop_node(1)  # also the bootstrap server: refreshes must ask nodes 2 and 3
        cluster.set_leader(T0, 3)
        assert producer.send("t", b"x").result(timeout=10).offset == 0
    assert [node for node, _ in produce_targets(cluster)] == [3]  # node 1 never answered
    assert [r.value for r in cluster.records(T0)] == [b"x"]


def test_transport_errors_are_retried(cluster):
    cluster.create_topic("t", 1)
    cluster.fail("Produce", status=grpc.StatusCode.UNAVAILABLE, times=2)
    with make_producer(cluster) as producer:
        assert producer.send("t", b"x").result(timeout=10).offset == 0
    assert len(cluster.calls_of("Produce")) == 3


def test_order_is_kept_while_the_first_batch_is_retried(cluster):
    cluster.create_topic("t", 1)
    cluster.fail("Produce", NotEnoughReplicasError.code, tp=T0, times=3)
    with make_producer(cluster, batch_size=120, linger_ms=5) as producer:
        futures = [producer.send("t", b"%03d" % i) for i in range(40)]
        producer.flush(timeout=10)
    assert [f.result().offset for f in futures] == list(range(40))
    assert [r.value for r in cluster.records(T0)] == [b"%03d" % i for i in range(40)]
    # One batch of the partition in flight at a time: every request carried one batch.
    assert all(len(req.partitions) == 1 for _, req in cluster.calls_of("Produce"))
    assert len(cluster.calls_of("Produce")) > 4


def test_acks_zero_resolves_with_no_offset(cluster):
    cluster.create_topic("t", 1)
    with make_producer(cluster, acks=0) as producer:
        result = producer.send("t", b"x", timestamp_ms=5).result(timeout=10)
    assert result == RecordMetadata("t", 0, -1, 5)
    assert [r.value for r in cluster.records(T0)] == [b"x"]
    assert cluster.calls_of("Produce")[0][1].acks == 0


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_batches_are_compressed(cluster, codec):
    cluster.create_topic("t", 1)
    with make_producer(cluster, compression=codec, linger_ms=5000) as producer:
        for i in range(10):
            producer.send("t", b"value %d" % i)
        producer.flush(timeout=10)
    ((_, req),) = cluster.calls_of("Produce")
    (batch,) = list(read_batches(req.partitions[0].records))
    assert batch.compression is Compression.from_name(codec)
    assert [r.value for r in cluster.records(T0)] == [b"value %d" % i for i in range(10)]


def test_unknown_topic_fails_after_max_block_ms(cluster):
    with make_producer(cluster, max_block_ms=200) as producer:
        error = producer.send("missing", b"x").exception(timeout=10)
    assert isinstance(error, UnknownTopicOrPartitionError)
    assert "'missing' not present in metadata after 200 ms" in error.message


def test_no_reachable_node_fails_the_send(cluster):
    cluster.stop()
    producer = Producer(cluster.bootstrap, max_block_ms=100, retry_backoff_ms=10)
    try:
        error = producer.send("t", b"x").exception(timeout=10)
    finally:
        producer.close()
    assert isinstance(error, NetworkError)
    assert error.retriable and error.name == "NETWORK_EXCEPTION"


def test_a_record_over_max_request_size_fails_at_once(cluster):
    cluster.create_topic("t", 1)
    with make_producer(cluster, max_request_size=1000) as producer:
        error = producer.send("t", b"x" * 2000).exception(timeout=1)
    assert isinstance(error, MessageTooLargeError)
    assert "max_request_size" in error.message
    assert cluster.calls_of("Produce") == []


def test_bad_arguments_raise_at_once(cluster):
    cluster.create_topic("t", 2)
    with make_producer(cluster) as producer:
        with pytest.raises(TypeError, match="encode text first"):
            producer.send("t", "text")  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="header key"):
            producer.send("t", b"x", headers=[(1, b"x")])  # type: ignore[list-item]
        with pytest.raises(ValueError, match=r"partition 2 of topic 't' is not in \[0, 2\)"):
            producer.send("t", b"x", partition=2)
        with pytest.raises(ValueError, match="invalid timestamp"):
            producer.send("t", b"x", timestamp_ms=-5)
        assert producer.send("t", b"x", partition=1).result(timeout=10).partition == 1
    with pytest.raises(ProducerClosedError):
        producer.send("t", b"x")


@pytest.mark.parametrize(
    ("setting", "value"),
    [
        ("acks", 2),
        ("linger_ms", -1),
        ("batch_size", 0),
        ("compression", "brotli"),
        ("max_in_flight_per_partition", 0),
        ("delivery_timeout_ms", 10),
    ],
)
def test_bad_settings_are_refused(setting, value):
    with pytest.raises(ValueError, match=setting if setting != "compression" else "brotli"):
        Producer("127.0.0.1:1", **{setting: value})


def test_bad_bootstrap_servers_are_refused():
    with pytest.raises(ValueError, match="not a HOST:PORT address: 'nohost'"):
        Producer("nohost")


def test_flush_times_out_and_close_fails_what_is_pending(cluster):
    cluster.create_topic("t", 1, leaders=[3])
    producer = make_producer(cluster)
    producer.partitions_for("t")
    cluster.stop_node(3)  # the leader is gone and nobody takes over
    future = producer.send("t", b"x")
    with pytest.raises(TimeoutError, match="1 record"):
        producer.flush(timeout=0.2)
    producer.close(timeout=0.2)
    assert isinstance(future.exception(timeout=5), ProducerClosedError)


def test_close_delivers_what_is_queued(cluster):
    cluster.create_topic("t", 1)
    producer = make_producer(cluster, linger_ms=5000)
    futures = [producer.send("t", b"%d" % i) for i in range(5)]
    producer.close()
    assert all(f.done() for f in futures)
    assert [f.result().offset for f in futures] == list(range(5))


def test_close_from_a_delivery_callback_does_not_deadlock(cluster):
    cluster.create_topic("t", 1)
    producer = make_producer(cluster)
    closed = threading.Event()

    def close_in_callback(_future) -> None:
        producer.close()
        closed.set()

    producer.send("t", b"x").add_done_callback(close_in_callback)
    assert closed.wait(10)
    with pytest.raises(ProducerClosedError):
        producer.send("t", b"y")
    producer.close()  # idempotent, from the user's thread too


def test_a_full_buffer_blocks_send_then_raises_and_loses_nothing_accepted(cluster):
    cluster.create_topic("t", 1)
    with make_producer(cluster, buffer_memory=20_000, batch_size=4_000, max_block_ms=300) as p:
        p.send("t", b"warm-up").result(timeout=10)
        cluster.delay_next_produce(2.0)  # the leader sits on the next request
        accepted = []
        with pytest.raises(BufferExhaustedError, match="max_block_ms"):
            for i in range(10_000):
                accepted.append(p.send("t", b"%05d" % i + b"x" * 95))  # noqa: PERF401
        assert 50 < len(accepted) < 10_000
        assert p._accumulator.buffered_bytes <= 20_000
        p.flush(timeout=30)
        assert all(f.result(timeout=0).offset >= 1 for f in accepted)
    values = [r.value for r in cluster.records(T0)]
    assert values == [b"warm-up"] + [b"%05d" % i + b"x" * 95 for i in range(len(accepted))]


def test_send_many_sends_values_keys_and_arrow_tables(cluster):
    import pyarrow as pa  # type: ignore[import-untyped]

    cluster.create_topic("t", 3)
    with make_producer(cluster, batch_size=1_000) as producer:
        values = [b"v%d" % i for i in range(100)]
        many = producer.send_many("t", values, timestamp_ms=1234)
        assert many.result(timeout=10) == 100
        metadata = many.metadata(timeout=0)
        assert len(metadata) == 100 and {m.timestamp for m in metadata} == {1234}
        keys = [b"k%d" % (i % 7) for i in range(50)]
        keyed = producer.send_many("t", [b"w%d" % i for i in range(50)], keys).metadata(10)
        # Keyed records land on Kafka's partition for their key, in the order given.
        assert [m.partition for m in keyed] == [partition_for_key(k, 3) for k in keys]
        table = pa.table({"key": ["a", None], "value": [b"x", None]})
        assert producer.send_arrow("t", table, partition=1).result(timeout=10) == 2
        with pytest.raises(TypeError, match="must be bytes or None"):
            producer.send_many("t", ["text"])  # type: ignore[list-item]
        with pytest.raises(TypeError, match="binary or string"):
            producer.send_arrow("t", pa.table({"value": [1, 2]}))
        with pytest.raises(MessageTooLargeError):
            producer.send_many("t", [b"x" * 2_000_000])
    stored = [r for p in range(3) for r in cluster.records(TopicPartition("t", p))]
    assert sorted(r.value for r in stored if r.value and r.value.startswith(b"v")) == sorted(values)
    by_offset = {(m.partition, m.offset): m for m in metadata}
    assert len(by_offset) == 100  # every record its own offset
    arrow = [(r.key, r.value) for r in cluster.records(TopicPartition("t", 1))][-2:]
    assert arrow == [(b"a", b"x"), (None, None)]
