"""The record accumulator as pure logic: batching by size, linger, readiness, draining per
leader, in-flight limits, retries at the front of the queue, expiry, flush and close."""

from __future__ import annotations

import random
from concurrent.futures import Future

import pytest

from odradek.client.accumulator import RecordAccumulator, estimate_record_size, record_size
from odradek.client.errors import ProducerClosedError
from odradek.client.types import RecordMetadata, TopicPartition
from odradek.errors import NotLeaderOrFollowerError
from odradek.records import RECORD_BATCH_OVERHEAD, Compression, Record, build_batch, read_batches

A0 = TopicPartition("a", 0)
A1 = TopicPartition("a", 1)
B0 = TopicPartition("b", 0)
LEADERS = {A0: 1, A1: 2, B0: 1}


def leader_of(tp):
    return LEADERS.get(tp)


def make(**overrides) -> RecordAccumulator:
    settings = {
        "batch_size": 1000,
        "linger_ms": 10,
        "retry_backoff_ms": 100,
        "retry_backoff_max_ms": 1000,
        "delivery_timeout_ms": 5000,
        "max_in_flight_per_partition": 1,
    }
    settings.update(overrides)
    return RecordAccumulator(**settings)


def add(acc, tp, value: bytes, now: int, **kw):
    record = Record(None, value, timestamp=now)
    future: Future[RecordMetadata] = Future()
    return acc.append(tp, record, future, now, **kw), future


def values(batch) -> list[bytes]:
    return [r.value for r in batch.records]


def test_records_of_a_partition_share_a_batch_until_it_is_full():
    # 61 bytes of batch header, 47 per record: two records fit in 160 bytes, three do not.
    acc = make(batch_size=160)
    results = [add(acc, A0, b"x" * 40, 0)[0] for _ in range(4)]
    assert [r.new_batch for r in results] == [True, False, True, False]
    batches = acc.queued(A0)
    assert [len(b.records) for b in batches] == [2, 2]
    # The first batch is full because another one is queued behind it.
    assert results[2].batch_full


def test_a_record_bigger_than_batch_size_gets_a_batch_of_its_own():
    acc = make(batch_size=100)
    add(acc, A0, b"small", 0)
    result, _ = add(acc, A0, b"y" * 500, 0)
    assert result.new_batch and result.batch_full
    add(acc, A0, b"after", 0)
    assert [values(b) for b in acc.queued(A0)] == [[b"small"], [b"y" * 500], [b"after"]]


def test_record_sizes_are_exact_and_the_estimate_an_upper_bound():
    rng = random.Random(4)
    for i in range(0, 300, 7):
        records = [
            Record(
                None if i % 5 == 0 else b"k" * i,
                None if i % 9 == 0 else b"v" * (3 * i),
                [("h\u00e9", b"1" * i), ("n", None)][: i % 3],
                timestamp=1_700_000_000_000 + rng.randrange(-(10**6), 10**6),
            )
            for _ in range(3)
        ]
        encoded = len(build_batch(records)) - RECORD_BATCH_OVERHEAD
        stamps = [r.timestamp or 0 for r in records]
        exact = sum(record_size(n, stamps[n] - stamps[0], r) for n, r in enumerate(records))
        assert exact == encoded
        for r in records:
            single = len(build_batch([r])) - RECORD_BATCH_OVERHEAD
            assert estimate_record_size(r.key, r.value, r.headers) >= single


def test_batch_size_counts_the_exact_bytes():
    acc = make(batch_size=1000)
    for _ in range(100):
        add(acc, A0, b"x" * 40, 0)
    for batch in acc.queued(A0):
        built = batch.build(Compression.NONE)
        assert len(built) == batch.size_in_bytes <= 1000
    # Full batches leave no room for one more record.
    assert all(b.size_in_bytes + 47 > 1000 for b in acc.queued(A0)[:-1])


def test_batch_is_not_ready_before_linger_unless_full():
    acc = make(linger_ms=10)
    add(acc, A0, b"a", 100)
    check = acc.ready(leader_of, 105)
    assert check.nodes == frozenset()
    assert check.next_check_ms == 5
    assert acc.ready(leader_of, 110).nodes == {1}


def test_full_batch_is_ready_at_once():
    acc = make(batch_size=100, linger_ms=1000)
    add(acc, A0, b"x" * 80, 0)
    assert acc.ready(leader_of, 0).nodes == {1}


def test_flush_and_close_make_everything_ready():
    acc = make(linger_ms=1000)
    add(acc, A0, b"a", 0)
    acc.begin_flush()
    assert acc.ready(leader_of, 0).nodes == {1}
    acc.end_flush()
    assert acc.ready(leader_of, 0).nodes == frozenset()
    acc.close()
    assert acc.ready(leader_of, 0).nodes == {1}
    with pytest.raises(ProducerClosedError):
        add(acc, A0, b"b", 0)


def test_unknown_leaders_are_reported_by_topic():
    acc = make(linger_ms=0)
    add(acc, TopicPartition("nowhere", 0), b"a", 0)
    add(acc, A0, b"a", 0)
    check = acc.ready(leader_of, 0)
    assert check.unknown_leader_topics == {"nowhere"}
    assert check.nodes == {1}


def test_drain_groups_first_batches_by_leader():
    acc = make(linger_ms=0, batch_size=100)
    for tp in (A0, A1, B0):
        add(acc, tp, b"x" * 60, 0)
        add(acc, tp, b"y" * 60, 0)  # a second batch per partition
    drained = acc.drain(leader_of, {1, 2}, 10_000, 0)
    assert {n: sorted((b.tp.topic, b.tp.partition) for b in bs) for n, bs in drained.items()} == {
        1: [("a", 0), ("b", 0)],
        2: [("a", 1)],
    }
    # One batch per partition only: the second batches wait for the first to finish.
    assert all(values(b) == [b"x" * 60] for bs in drained.values() for b in bs)
    assert acc.drain(leader_of, {1, 2}, 10_000, 0) == {}
    assert acc.in_flight_count() == 3


def test_drain_respects_max_request_size_but_always_sends_one_batch():
    acc = make(linger_ms=0)
    add(acc, A0, b"x" * 300, 0)
    add(acc, B0, b"y" * 300, 0)
    first = acc.drain(leader_of, {1}, 100, 0)
    assert sum(len(bs) for bs in first.values()) == 1
    second = acc.drain(leader_of, {1}, 100, 0)
    assert sum(len(bs) for bs in second.values()) == 1


def test_a_partition_sends_its_next_batch_only_after_the_first_is_done():
    acc = make(linger_ms=0, batch_size=100)
    add(acc, A0, b"x" * 80, 0)
    add(acc, A0, b"y" * 80, 0)
    (first,) = acc.drain(leader_of, {1}, 10_000, 0)[1]
    assert acc.ready(leader_of, 0).nodes == frozenset()
    acc.done(first)
    (second,) = acc.drain(leader_of, {1}, 10_000, 0)[1]
    assert values(second) == [b"y" * 80]


def test_more_in_flight_per_partition_when_allowed():
    acc = make(linger_ms=0, batch_size=100, max_in_flight_per_partition=2)
    for v in (b"1", b"2", b"3"):
        add(acc, A0, v * 80, 0)
    assert len(acc.drain(leader_of, {1}, 10_000, 0)[1]) == 1
    assert len(acc.drain(leader_of, {1}, 10_000, 0)[1]) == 1
    assert acc.drain(leader_of, {1}, 10_000, 0) == {}


def test_a_retried_batch_goes_first_and_waits_out_its_backoff():
    acc = make(linger_ms=0, batch_size=100, retry_backoff_ms=50)
    add(acc, A0, b"first" * 16, 0)
    add(acc, A0, b"second" * 14, 0)
    (batch,) = acc.drain(leader_of, {1}, 10_000, 0)[1]
    batch.attempts += 1
    acc.reenqueue(batch, 1000)
    assert [values(b)[0][:5] for b in acc.queued(A0)] == [b"first", b"secon"]
    check = acc.ready(leader_of, 1020)
    assert check.nodes == frozenset() and check.next_check_ms == 30
    assert acc.drain(leader_of, {1}, 10_000, 1020) == {}
    (again,) = acc.drain(leader_of, {1}, 10_000, 1050)[1]
    assert again is batch


def test_new_records_do_not_join_a_batch_that_was_already_sent():
    acc = make(linger_ms=0)
    add(acc, A0, b"a", 0)
    (batch,) = acc.drain(leader_of, {1}, 10_000, 0)[1]
    batch.build(Compression.NONE)
    batch.attempts = 1
    acc.reenqueue(batch, 0)
    result, _ = add(acc, A0, b"b", 0)
    assert result.new_batch
    assert [values(b) for b in acc.queued(A0)] == [[b"a"], [b"b"]]


def test_backoff_doubles_up_to_the_maximum():
    acc = make(retry_backoff_ms=100, retry_backoff_max_ms=1000)
    assert [acc.backoff_ms(n) for n in range(1, 7)] == [100, 200, 400, 800, 1000, 1000]


def test_sticky_append_aborts_instead_of_starting_a_batch():
    acc = make(batch_size=100)
    first, _ = add(acc, A0, b"x" * 60, 0, abort_on_new_batch=True)
    assert first.aborted and not first.appended  # no batch to join yet
    add(acc, A0, b"x" * 60, 0)
    result, _ = add(acc, A0, b"y" * 60, 0, abort_on_new_batch=True)
    assert result.aborted
    assert [values(b) for b in acc.queued(A0)] == [[b"x" * 60]]


def test_expired_batches_are_taken_out():
    acc = make(delivery_timeout_ms=100, linger_ms=1000, batch_size=100)
    add(acc, A0, b"old" * 30, 0)
    add(acc, A0, b"new" * 30, 60)
    assert acc.expired(99) == []
    (gone,) = acc.expired(100)
    assert values(gone) == [b"old" * 30]
    assert [values(b) for b in acc.queued(A0)] == [[b"new" * 30]]


def test_completed_batch_resolves_futures_with_consecutive_offsets():
    acc = make(linger_ms=0)
    _, f1 = add(acc, A0, b"a", 111)
    _, f2 = add(acc, A0, b"b", 112)
    (batch,) = acc.drain(leader_of, {1}, 10_000, 0)[1]
    payload = batch.build(Compression.NONE)
    (decoded,) = list(read_batches(payload))
    assert decoded.base_offset == 0 and [r.value for r in decoded.records()] == [b"a", b"b"]
    batch.complete(40, -1)
    assert f1.result() == RecordMetadata("a", 0, 40, 111)
    assert f2.result() == RecordMetadata("a", 0, 41, 112)


def test_log_append_time_and_acks_zero_results():
    acc = make(linger_ms=0)
    _, f1 = add(acc, A0, b"a", 5)
    (batch,) = acc.drain(leader_of, {1}, 10_000, 0)[1]
    batch.complete(-1, 999)
    assert f1.result() == RecordMetadata("a", 0, -1, 999)


def test_abort_undrained_fails_queued_futures():
    acc = make(linger_ms=1000)
    _, future = add(acc, A0, b"a", 0)
    assert acc.abort_undrained(NotLeaderOrFollowerError("x")) == 1
    assert isinstance(future.exception(), NotLeaderOrFollowerError)
    assert not acc.has_undrained()
