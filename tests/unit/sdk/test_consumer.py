"""The consumer against in-process gRPC nodes (fake_cluster.py): positions, seeks, offset
lookups, leader changes and epoch fencing, unreachable leaders, out-of-range resets, and the
parsing of fetch answers (batches starting before the position, partial and control batches)."""

from __future__ import annotations

import threading

import grpc
import pytest

from odradek import Consumer, ConsumerRecord, OffsetAndTimestamp, TopicPartition
from odradek.client.errors import NoOffsetForPartitionError
from odradek.client.fetcher import parse_fetched
from odradek.errors import (
    CorruptRecordError,
    MessageTooLargeError,
    OffsetOutOfRangeError,
    UnknownLeaderEpochError,
    UnsupportedVersionError,
)
from odradek.records import Record, TimestampType, build_batch, set_partition_leader_epoch
from tests.unit.sdk.fake_cluster import FakeCluster

T0 = TopicPartition("t", 0)


def append(cluster: FakeCluster, tp: TopicPartition, *values: bytes, ts: int = 1000) -> None:
    records = [Record(b"k", v, [("h", b"1")], timestamp=ts + i) for i, v in enumerate(values)]
    cluster.append(tp, build_batch(records))


def make_consumer(cluster: FakeCluster, **overrides) -> Consumer:
    settings = {"fetch_max_wait_ms": 50, "retry_backoff_ms": 10, "default_api_timeout_ms": 5000}
    settings.update(overrides)
    return Consumer(cluster.bootstrap, **settings)  # type: ignore[arg-type]


def consume(consumer: Consumer, count: int, timeout_ms: int = 5000) -> list[bytes | None]:
    """Poll until ``count`` records came (or fail after about ``timeout_ms``)."""
    out: list[bytes | None] = []
    for _ in range(max(timeout_ms // 50, 1)):
        out.extend(r.value for r in consumer.poll(timeout_ms=50))
        if len(out) >= count:
            return out
    raise AssertionError(f"only {len(out)} of {count} records arrived: {out}")


def test_poll_returns_records_from_the_beginning(cluster):
    cluster.create_topic("t", 1, leaders=[2])
    append(cluster, T0, b"a", b"b")
    append(cluster, T0, b"c")
    with make_consumer(cluster) as consumer:
        consumer.assign([T0])
        records: list[ConsumerRecord] = []
        while len(records) < 3:
            records.extend(consumer.poll(timeout_ms=2000))
        assert consumer.position(T0) == 3
    first = records[0]
    assert (first.topic, first.partition, first.offset, first.key, first.value) == (
        "t",
        0,
        0,
        b"k",
        b"a",
    )
    assert first.timestamp == 1000 and first.timestamp_type is TimestampType.CREATE_TIME
    assert first.headers == (("h", b"1"),) and first.leader_epoch == 0
    assert [(r.offset, r.value) for r in records] == [(0, b"a"), (1, b"b"), (2, b"c")]
    assert {node for node, _ in cluster.calls_of("Fetch")} == {2}
    assert all(req.replica_id == -1 for _, req in cluster.calls_of("Fetch"))


def test_poll_waits_for_records_that_arrive_later(cluster):
    cluster.create_topic("t", 1)
    with make_consumer(cluster, fetch_max_wait_ms=500) as consumer:
        consumer.assign([T0])
        assert consumer.poll(timeout_ms=100) == []
        timer = threading.Timer(0.05, append, (cluster, T0, b"late"))
        timer.start()
        try:
            assert consume(consumer, 1) == [b"late"]
        finally:
            timer.join()


def test_latest_reset_skips_what_is_there(cluster):
    cluster.create_topic("t", 1)
    append(cluster, T0, b"old")
    with make_consumer(cluster, auto_offset_reset="latest") as consumer:
        consumer.assign([T0])
        assert consumer.position(T0) == 1
        append(cluster, T0, b"new")
        assert consume(consumer, 1) == [b"new"]


def test_no_reset_policy_raises_without_a_position(cluster):
    cluster.create_topic("t", 1)
    with make_consumer(cluster, auto_offset_reset="none") as consumer:
        consumer.assign([T0])
        with pytest.raises(NoOffsetForPartitionError, match="t-0 has no position"):
            consumer.poll(timeout_ms=10)
        consumer.seek(T0, 0)
        append(cluster, T0, b"x")
        assert consume(consumer, 1) == [b"x"]


def test_seek_into_the_middle_of_a_batch_skips_the_records_before(cluster):
    cluster.create_topic("t", 1)
    append(cluster, T0, b"0", b"1", b"2", b"3", b"4")
    with make_consumer(cluster) as consumer:
        consumer.assign([T0])
        consumer.seek(T0, 3)
        assert consume(consumer, 2) == [b"3", b"4"]
        assert consumer.position(T0) == 5


def test_seek_to_beginning_and_end(cluster):
    cluster.create_topic("t", 1)
    append(cluster, T0, b"a", b"b")
    with make_consumer(cluster) as consumer:
        consumer.assign([T0])
        consumer.seek_to_end()
        assert consumer.position(T0) == 2
        append(cluster, T0, b"c")
        assert consume(consumer, 1) == [b"c"]
        consumer.seek_to_beginning(T0)
        assert consume(consumer, 3) == [b"a", b"b", b"c"]


def test_offsets_for_times_and_seek_to_timestamp(cluster):
    cluster.create_topic("t", 1)
    append(cluster, T0, b"a", b"b", b"c", ts=1000)  # timestamps 1000, 1001, 1002
    with make_consumer(cluster) as consumer:
        consumer.assign([T0])
        assert consumer.offsets_for_times({T0: 1001}) == {T0: OffsetAndTimestamp(1, 1001, 0)}
        assert consumer.offsets_for_times({T0: 5000}) == {T0: None}
        consumer.seek_to_timestamp(1002)
        assert consume(consumer, 1) == [b"c"]
        consumer.seek_to_timestamp(9999, T0)  # after every record: the end
        assert consumer.position(T0) == 3
        with pytest.raises(ValueError, match="timestamp"):
            consumer.offsets_for_times({T0: -4})


def test_max_timestamp_offsets_name_the_record_with_the_largest_timestamp(cluster):
    cluster.create_topic("t", 2)
    t1 = TopicPartition("t", 1)
    append(cluster, T0, b"a", b"b", b"c", ts=1000)  # timestamps 1000, 1001, 1002
    append(cluster, T0, b"d", ts=500)
    with make_consumer(cluster) as consumer:
        assert consumer.max_timestamp_offsets([T0, t1]) == {
            T0: OffsetAndTimestamp(2, 1002, 0),
            t1: None,
        }
    assert [p.timestamp for _, req in cluster.calls_of("ListOffsets") for p in req.partitions] == [
        -3,
        -3,
    ]


def test_beginning_and_end_offsets_follow_the_log_start(cluster):
    cluster.create_topic("t", 2)
    t1 = TopicPartition("t", 1)
    append(cluster, T0, b"a", b"b", b"c")
    cluster.partition(T0).log_start_offset = 2
    with make_consumer(cluster) as consumer:
        assert consumer.beginning_offsets([T0, t1]) == {T0: 2, t1: 0}
        assert consumer.end_offsets([T0, t1]) == {T0: 3, t1: 0}


def test_a_leader_change_is_followed_with_the_new_epoch(cluster):
    cluster.create_topic("t", 1, leaders=[1])
    append(cluster, T0, b"a")
    with make_consumer(cluster) as consumer:
        consumer.assign([T0])
        assert consume(consumer, 1) == [b"a"]
        cluster.set_leader(T0, 3)
        append(cluster, T0, b"b")
        assert consume(consumer, 1) == [b"b"]
    fetches = [
        (node, req.partitions[0].current_leader_epoch) for node, req in cluster.calls_of("Fetch")
    ]
    assert (1, 0) in fetches and fetches[-1] == (3, 1)
    # Node 1 answered NOT_LEADER_OR_FOLLOWER with the new leader: no fetch at node 3 with the
    # old epoch was needed.
    assert (3, 0) not in fetches


def test_a_fenced_epoch_refreshes_the_leader_epoch(cluster):
    cluster.create_topic("t", 1, leaders=[2])
    append(cluster, T0, b"a")
    with make_consumer(cluster) as consumer:
        consumer.assign([T0])
        assert consume(consumer, 1) == [b"a"]
        cluster.set_leader(T0, 2)  # same leader, next epoch
        append(cluster, T0, b"b")
        assert consume(consumer, 1) == [b"b"]
    epochs = [req.partitions[0].current_leader_epoch for _, req in cluster.calls_of("Fetch")]
    assert epochs[0] == 0 and epochs[-1] == 1


def test_unknown_leader_epoch_is_retried(cluster):
    cluster.create_topic("t", 1)
    append(cluster, T0, b"a")
    cluster.fail("Fetch", UnknownLeaderEpochError.code, tp=T0, times=2)
    with make_consumer(cluster) as consumer:
        consumer.assign([T0])
        assert consume(consumer, 1) == [b"a"]
    assert len(cluster.calls_of("Fetch")) >= 3


def test_not_leader_with_a_hint_of_an_unknown_broker_falls_back_to_metadata(cluster):
    cluster.create_topic("t", 1, leaders=[1])
    append(cluster, T0, b"a")
    cluster.fail("Fetch", 6, tp=T0, hint=(99, 7))  # a leader nobody knows
    with make_consumer(cluster) as consumer:
        consumer.assign([T0])
        assert consume(consumer, 1) == [b"a"]


def test_an_unreachable_leader_is_replaced_through_metadata(cluster):
    cluster.create_topic("t", 1, leaders=[1])
    append(cluster, T0, b"a")
    with make_consumer(cluster) as consumer:
        consumer.assign([T0])
        assert consume(consumer, 1) == [b"a"]
        cluster.stop_node(1)
        cluster.set_leader(T0, 2)
        append(cluster, T0, b"b")
        assert consume(consumer, 1) == [b"b"]


def test_transport_errors_are_retried(cluster):
    cluster.create_topic("t", 1)
    append(cluster, T0, b"a")
    cluster.fail("Fetch", status=grpc.StatusCode.UNAVAILABLE, times=2)
    with make_consumer(cluster) as consumer:
        consumer.assign([T0])
        assert consume(consumer, 1) == [b"a"]


def test_out_of_range_resets_to_earliest(cluster):
    cluster.create_topic("t", 1)
    append(cluster, T0, b"0", b"1", b"2", b"3")
    with make_consumer(cluster) as consumer:
        consumer.assign([T0])
        consumer.seek(T0, 1)
        cluster.partition(T0).log_start_offset = 3  # records deleted under the consumer
        assert consume(consumer, 1) == [b"3"]


def test_out_of_range_raises_without_a_reset_policy(cluster):
    cluster.create_topic("t", 1)
    append(cluster, T0, b"0")
    with make_consumer(cluster, auto_offset_reset="none") as consumer:
        consumer.assign([T0])
        consumer.seek(T0, 7)
        with pytest.raises(OffsetOutOfRangeError, match="t-0: fetch offset 7 is out of range"):
            consume(consumer, 1)


def test_a_non_retriable_fetch_error_is_raised_typed(cluster):
    cluster.create_topic("t", 1)
    cluster.fail("Fetch", UnsupportedVersionError.code, tp=T0)
    with make_consumer(cluster) as consumer:
        consumer.assign([T0])
        with pytest.raises(UnsupportedVersionError, match="t-0"):
            consume(consumer, 1)


def test_max_poll_records_and_positions(cluster):
    cluster.create_topic("t", 1)
    append(cluster, T0, *[b"%d" % i for i in range(10)])
    with make_consumer(cluster, max_poll_records=3) as consumer:
        consumer.assign([T0])
        first = consumer.poll(timeout_ms=2000)
        assert [r.offset for r in first] == [0, 1, 2]
        assert consumer.position(T0) == 3
        assert [r.offset for r in consumer.poll(timeout_ms=2000)] == [3, 4, 5]
        consumer.seek(T0, 8)  # drops what was buffered
        assert [r.offset for r in consumer.poll(timeout_ms=2000)] == [8, 9]


def test_partitions_of_several_leaders_are_fetched_together(cluster):
    cluster.create_topic("t", 3)  # leaders 1, 2, 3
    tps = [TopicPartition("t", p) for p in range(3)]
    for tp in tps:
        append(cluster, tp, b"%d" % tp.partition)
    with make_consumer(cluster) as consumer:
        consumer.assign(tps)
        assert sorted(consume(consumer, 3)) == [b"0", b"1", b"2"]  # type: ignore[type-var]
    assert {node for node, _ in cluster.calls_of("Fetch")} == {1, 2, 3}


def test_assignment_and_argument_checks(cluster):
    cluster.create_topic("t", 2)
    with make_consumer(cluster) as consumer:
        with pytest.raises(RuntimeError, match="assign"):
            consumer.poll()
        consumer.assign([T0, T0, TopicPartition("t", 1)])
        assert consumer.assignment() == {T0, TopicPartition("t", 1)}
        with pytest.raises(ValueError, match="not assigned"):
            consumer.seek(TopicPartition("other", 0), 0)
        with pytest.raises(ValueError, match="offset"):
            consumer.seek(T0, -1)
        with pytest.raises(TypeError):
            consumer.assign([("t", 0)])  # type: ignore[list-item]
        consumer.assign([])
        assert consumer.assignment() == set()
    with pytest.raises(RuntimeError, match="closed"):
        consumer.assign([T0])
    with pytest.raises(ValueError, match="auto_offset_reset"):
        Consumer("127.0.0.1:1", auto_offset_reset="smallest")  # type: ignore[arg-type]


# --- parsing fetch answers -------------------------------------------------------------------


def stored(base_offset: int, *values: bytes, epoch: int = 4, control: bool = False) -> bytes:
    data = bytearray(
        build_batch(
            [Record(None, v, timestamp=7) for v in values],
            base_offset=base_offset,
            is_control=control,
        )
    )
    set_partition_leader_epoch(data, 0, epoch)
    return bytes(data)


def test_parse_skips_records_before_the_fetch_offset():
    data = stored(10, b"a", b"b", b"c") + stored(13, b"d")
    fetched = parse_fetched(T0, data, 12)
    assert [(r.offset, r.value, r.leader_epoch) for r in fetched.records] == [
        (12, b"c", 4),
        (13, b"d", 4),
    ]
    assert fetched.next_offset == 14


def test_parsed_records_are_whole_consumer_records():
    data = bytearray(
        build_batch(
            [
                Record(b"k", b"v", headers=[("h", b"1"), ("n", None)], timestamp=7),
                Record(None, None),
            ],
            base_offset=3,
        )
    )
    set_partition_leader_epoch(data, 0, 9)
    first, second = parse_fetched(T0, bytes(data), 3).records
    want = ConsumerRecord(
        topic=T0.topic,
        partition=T0.partition,
        offset=3,
        timestamp=7,
        timestamp_type=TimestampType.CREATE_TIME,
        key=b"k",
        value=b"v",
        headers=(("h", b"1"), ("n", None)),
        leader_epoch=9,
    )
    assert first == want
    assert hash(first) == hash(want)
    assert repr(first) == repr(want)
    assert (second.offset, second.timestamp, second.key, second.value) == (4, -1, None, None)
    with pytest.raises(AttributeError):
        first.value = b"x"  # type: ignore[misc]


def test_parse_ignores_a_partial_trailing_batch():
    full, partial = stored(0, b"a"), stored(1, b"b")
    fetched = parse_fetched(T0, full + partial[:-5], 0)
    assert [r.value for r in fetched.records] == [b"a"]
    assert fetched.next_offset == 1


def test_parse_skips_control_batches_but_moves_past_them():
    fetched = parse_fetched(T0, stored(0, b"marker", control=True) + stored(1, b"a"), 0)
    assert [r.offset for r in fetched.records] == [1]
    assert parse_fetched(T0, stored(5, b"marker", control=True), 5).next_offset == 6


def test_parse_checks_crcs():
    data = bytearray(stored(0, b"abc"))
    data[-2] ^= 0xFF  # the value's last byte: still decodes, but the CRC no longer matches
    with pytest.raises(CorruptRecordError):
        parse_fetched(T0, bytes(data), 0)
    assert parse_fetched(T0, bytes(data), 0, check_crcs=False).next_offset == 1


def test_parse_refuses_an_answer_without_a_whole_batch():
    with pytest.raises(MessageTooLargeError, match="max_partition_fetch_bytes"):
        parse_fetched(T0, stored(0, b"x" * 100)[:50], 0)
    assert parse_fetched(T0, b"", 3).next_offset == 3


def test_the_next_fetch_is_sent_as_poll_returns(cluster):
    # Prefetch: once a poll hands out a partition's last buffered records, the fetch for what
    # follows is already on its way, before the caller polls again (as Kafka's consumer).
    cluster.create_topic("t", 1)
    append(cluster, T0, b"a", b"b")
    with make_consumer(cluster, fetch_max_wait_ms=2000) as consumer:
        consumer.assign([T0])
        consumer.seek(T0, 0)
        assert [r.value for r in consumer.poll(timeout_ms=5000)] == [b"a", b"b"]
        # No poll runs now; the second fetch, a long poll at the end of the log, arrives anyway.
        assert _fetch_offsets_reach(cluster, 2) == [0, 2]
        append(cluster, T0, b"c")
        assert [r.value for r in consumer.poll(timeout_ms=5000)] == [b"c"]
        # The answer to the prefetch carried "c": no fetch at offset 2 was sent again.
        assert _fetch_offsets_reach(cluster, 3)[:3] == [0, 2, 3]


def _fetch_offsets_reach(cluster: FakeCluster, count: int) -> list[int]:
    """The fetch offsets the cluster was asked for, once there are ``count`` (10 s at most)."""
    for _ in range(1000):
        offsets = [req.partitions[0].fetch_offset for _, req in cluster.calls_of("Fetch")]
        if len(offsets) >= count:
            return offsets
        threading.Event().wait(0.01)
    raise AssertionError(f"only these fetches arrived: {offsets}")


def test_a_seek_while_a_fetch_is_in_flight_drops_its_answer(cluster):
    cluster.create_topic("t", 1)
    append(cluster, T0, b"a", b"b", b"c")
    with make_consumer(cluster, max_poll_records=1) as consumer:
        consumer.assign([T0])
        consumer.seek(T0, 0)
        assert [r.value for r in consumer.poll(timeout_ms=5000)] == [b"a"]
        consumer.seek(T0, 2)
        assert [r.value for r in consumer.poll(timeout_ms=5000)] == [b"c"]
        assert consumer.position(T0) == 3
