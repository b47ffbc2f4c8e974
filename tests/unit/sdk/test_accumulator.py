"""The record accumulator as pure logic: batching by size, linger, readiness, draining per
leader, in-flight limits, retries at the front of the queue, expiry by deadline, bounded
memory (blocking, then BufferExhaustedError), flush and close."""

from __future__ import annotations

import random
import threading
from typing import Any

import pytest

from odradek.client.accumulator import (
    RECORD_MEMORY_OVERHEAD,
    RecordAccumulator,
    estimate_record_size,
)
from odradek.client.errors import BufferExhaustedError, ProducerClosedError
from odradek.client.types import RecordMetadata, TopicPartition
from odradek.errors import NotLeaderOrFollowerError
from odradek.records import RECORD_BATCH_OVERHEAD, Compression, Record, build_batch, read_batches
from odradek.records.appender import encoded_headers

A0 = TopicPartition("a", 0)
A1 = TopicPartition("a", 1)
B0 = TopicPartition("b", 0)
LEADERS = {A0: 1, A1: 2, B0: 1}


def leader_of(tp):
    return LEADERS.get(tp)


class Now:
    def __init__(self) -> None:
        self.ms = 0

    def __call__(self) -> int:
        return self.ms


def make(now: Now | None = None, **overrides: Any) -> RecordAccumulator:
    settings: dict[str, Any] = {
        "batch_size": 1000,
        "linger_ms": 10,
        "retry_backoff_ms": 100,
        "retry_backoff_max_ms": 1000,
        "delivery_timeout_ms": 5000,
        "max_in_flight_per_partition": 1,
        "now_ms": now or Now(),
    }
    settings.update(overrides)
    return RecordAccumulator(**settings)


def add(acc, tp, value: bytes, timestamp: int = 0, key: bytes | None = None, **kw):
    estimate = estimate_record_size(key, value, ())
    return acc.append(tp.topic, tp.partition, timestamp, key, value, b"\x00", estimate, **kw)


def values(batch) -> list[bytes | None]:
    (decoded,) = list(read_batches(batch.build(Compression.NONE)))
    return [r.value for r in decoded.records()]


def counts(acc, tp) -> list[int]:
    return [b.record_count for b in acc.queued(tp)]


def test_records_of_a_partition_share_a_batch_until_it_is_full():
    # 61 bytes of batch header, 43 per record of 40 bytes (the estimate says 76): two fit in
    # 190 bytes, a third does not.
    acc = make(batch_size=190)
    for _ in range(4):
        add(acc, A0, b"x" * 40)
    assert counts(acc, A0) == [2, 2]
    # Both are full (a third such record would not fit) and closed for the sender; a smaller
    # batch stays open for more.
    assert all(b.closed for b in acc.queued(A0))
    add(acc, A0, b"x")
    assert counts(acc, A0) == [2, 2, 1]
    assert not acc.queued(A0)[-1].closed


def test_a_record_bigger_than_batch_size_gets_a_batch_of_its_own():
    acc = make(batch_size=100)
    add(acc, A0, b"small")
    add(acc, A0, b"y" * 500)
    add(acc, A0, b"after")
    assert [values(b) for b in acc.queued(A0)] == [[b"small"], [b"y" * 500], [b"after"]]


def test_the_estimate_is_an_upper_bound_of_a_records_bytes():
    rng = random.Random(4)
    for i in range(0, 300, 7):
        record = Record(
            None if i % 5 == 0 else b"k" * i,
            None if i % 9 == 0 else b"v" * (3 * i),
            [("h\u00e9", b"1" * i), ("n", None)][: i % 3],
            timestamp=1_700_000_000_000 + rng.randrange(-(10**6), 10**6),
        )
        single = len(build_batch([record])) - RECORD_BATCH_OVERHEAD
        assert estimate_record_size(record.key, record.value, record.headers) >= single


def test_batches_are_the_bytes_build_batch_writes_and_within_batch_size():
    acc = make(batch_size=1000)
    records = [
        Record(b"k%d" % i if i % 3 else None, b"x" * (i % 50), timestamp=1000 + i)
        for i in range(100)
    ]
    for r in records:
        est = estimate_record_size(r.key, r.value, r.headers)
        assert r.timestamp is not None
        acc.append("a", 0, r.timestamp, r.key, r.value, encoded_headers(r.headers), est)
    seen: list[Record] = []
    for batch in acc.queued(A0):
        built = batch.build(Compression.NONE)
        assert len(built) == batch.size_in_bytes <= 1000
        (decoded,) = list(read_batches(built))
        chunk = records[len(seen) : len(seen) + batch.record_count]
        assert built == build_batch(chunk)
        seen.extend(decoded.records())
    assert [(r.key, r.value, r.timestamp) for r in seen] == [
        (r.key, r.value, r.timestamp) for r in records
    ]


def test_append_many_writes_the_same_bytes_as_appends_one_at_a_time():
    keys = [None if i % 4 == 0 else b"key-%d" % i for i in range(60)]
    vals = [None if i % 7 == 0 else b"v" * i for i in range(60)]
    for batch_size in (100_000, 500):
        one = make(batch_size=batch_size)
        many = make(batch_size=batch_size)
        for k, v in zip(keys, vals, strict=True):
            one.append("a", 0, 77, k, v, b"\x00", estimate_record_size(k, v, ()))
        parts: list[Any] = []
        start = 0
        while start < len(vals):
            start, _ = many.append_many("a", 0, 77, keys, vals, start, len(vals), parts)
        assert sum(count for _, _, count, _ in parts) == 60
        built = [b.build(Compression.NONE) for b in many.queued(A0)]
        assert all(len(b) <= batch_size for b in built)
        if batch_size == 100_000:  # one batch either way: the same bytes
            assert built == [b.build(Compression.NONE) for b in one.queued(A0)]
        decoded = [
            (r.key, r.value) for raw in built for b in read_batches(raw) for r in b.records()
        ]
        assert decoded == list(zip(keys, vals, strict=True))


def test_batch_is_not_ready_before_linger_unless_full():
    now = Now()
    acc = make(now, linger_ms=10)
    now.ms = 100
    add(acc, A0, b"a")
    check = acc.ready(leader_of, 105)
    assert check.nodes == frozenset()
    assert check.next_check_ms == 5
    assert acc.ready(leader_of, 110).nodes == {1}


def test_full_batch_is_ready_at_once():
    acc = make(batch_size=150, linger_ms=1000)
    add(acc, A0, b"x" * 80)
    assert acc.ready(leader_of, 0).nodes == {1}


def test_flush_and_close_make_everything_ready():
    acc = make(linger_ms=1000)
    add(acc, A0, b"a")
    acc.begin_flush()
    assert acc.ready(leader_of, 0).nodes == {1}
    acc.end_flush()
    assert acc.ready(leader_of, 0).nodes == frozenset()
    acc.close()
    assert acc.ready(leader_of, 0).nodes == {1}
    with pytest.raises(ProducerClosedError):
        add(acc, A0, b"b")


def test_unknown_leaders_are_reported_by_topic():
    acc = make(linger_ms=0)
    add(acc, TopicPartition("nowhere", 0), b"a")
    add(acc, A0, b"a")
    check = acc.ready(leader_of, 0)
    assert check.unknown_leader_topics == {"nowhere"}
    assert check.nodes == {1}


def test_drain_groups_first_batches_by_leader():
    acc = make(linger_ms=0, batch_size=150)
    for tp in (A0, A1, B0):
        add(acc, tp, b"x" * 60)
        add(acc, tp, b"y" * 60)  # a second batch per partition
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
    add(acc, A0, b"x" * 300)
    add(acc, B0, b"y" * 300)
    first = acc.drain(leader_of, {1}, 100, 0)
    assert sum(len(bs) for bs in first.values()) == 1
    second = acc.drain(leader_of, {1}, 100, 0)
    assert sum(len(bs) for bs in second.values()) == 1


def test_a_partition_sends_its_next_batch_only_after_the_first_is_done():
    acc = make(linger_ms=0, batch_size=150)
    add(acc, A0, b"x" * 80)
    add(acc, A0, b"y" * 80)
    (first,) = acc.drain(leader_of, {1}, 10_000, 0)[1]
    assert acc.ready(leader_of, 0).nodes == frozenset()
    acc.done(first)
    (second,) = acc.drain(leader_of, {1}, 10_000, 0)[1]
    assert values(second) == [b"y" * 80]


def test_more_in_flight_per_partition_when_allowed():
    acc = make(linger_ms=0, batch_size=150, max_in_flight_per_partition=2)
    for v in (b"1", b"2", b"3"):
        add(acc, A0, v * 80)
    assert len(acc.drain(leader_of, {1}, 10_000, 0)[1]) == 1
    assert len(acc.drain(leader_of, {1}, 10_000, 0)[1]) == 1
    assert acc.drain(leader_of, {1}, 10_000, 0) == {}


def test_a_retried_batch_goes_first_and_waits_out_its_backoff():
    acc = make(linger_ms=0, batch_size=150, retry_backoff_ms=50)
    add(acc, A0, b"first" * 16)
    add(acc, A0, b"second" * 14)
    (batch,) = acc.drain(leader_of, {1}, 10_000, 0)[1]
    batch.attempts += 1
    acc.reenqueue(batch, 1000)
    assert [(values(b)[0] or b"")[:5] for b in acc.queued(A0)] == [b"first", b"secon"]
    check = acc.ready(leader_of, 1020)
    assert check.nodes == frozenset() and check.next_check_ms == 30
    assert acc.drain(leader_of, {1}, 10_000, 1020) == {}
    (again,) = acc.drain(leader_of, {1}, 10_000, 1050)[1]
    assert again is batch


def test_new_records_do_not_join_a_batch_that_was_already_sent():
    acc = make(linger_ms=0)
    add(acc, A0, b"a")
    (batch,) = acc.drain(leader_of, {1}, 10_000, 0)[1]
    batch.build(Compression.NONE)
    batch.attempts = 1
    acc.reenqueue(batch, 0)
    add(acc, A0, b"b")
    assert [values(b) for b in acc.queued(A0)] == [[b"a"], [b"b"]]


def test_backoff_doubles_up_to_the_maximum():
    acc = make(retry_backoff_ms=100, retry_backoff_max_ms=1000)
    assert [acc.backoff_ms(n) for n in range(1, 7)] == [100, 200, 400, 800, 1000, 1000]


def test_sticky_append_aborts_instead_of_starting_a_batch():
    acc = make(batch_size=200)
    assert add(acc, A0, b"x" * 60, abort_on_new_batch=True) is None  # no batch to join yet
    add(acc, A0, b"x" * 60)
    assert add(acc, A0, b"y" * 60, abort_on_new_batch=True) is None
    assert [values(b) for b in acc.queued(A0)] == [[b"x" * 60]]


def test_expired_batches_are_taken_out_in_deadline_order():
    now = Now()
    acc = make(now, delivery_timeout_ms=100, linger_ms=1000, batch_size=150)
    add(acc, A0, b"old" * 30)
    now.ms = 60
    add(acc, B0, b"new" * 30)
    assert acc.next_deadline_ms() == 100
    assert acc.expired(99) == []
    (gone,) = acc.expired(100)
    assert values(gone) == [b"old" * 30]
    assert acc.queued(A0) == []
    assert [values(b) for b in acc.queued(B0)] == [[b"new" * 30]]
    assert acc.next_deadline_ms() == 160
    # Batches in flight are not this path's to expire; a retried one is, at its deadline.
    (batch,) = acc.drain(leader_of, {1}, 10_000, 60)[1]
    assert acc.expired(500) == []
    batch.attempts = 1
    acc.reenqueue(batch, 150)
    assert acc.next_deadline_ms() == 160
    assert acc.expired(160) == [batch]
    assert acc.buffered_bytes == 0


def test_completed_batch_resolves_futures_with_consecutive_offsets():
    acc = make(linger_ms=0)
    f1 = add(acc, A0, b"a", 111)
    f2 = add(acc, A0, b"b", 112)
    assert not f1.done()
    (batch,) = acc.drain(leader_of, {1}, 10_000, 0)[1]
    payload = batch.build(Compression.NONE)
    (decoded,) = list(read_batches(payload))
    assert decoded.base_offset == 0 and [r.value for r in decoded.records()] == [b"a", b"b"]
    batch.complete(40, -1)
    assert f1.done()
    assert f1.result() == RecordMetadata("a", 0, 40, 111)
    assert f2.result() == RecordMetadata("a", 0, 41, 112)
    seen: list[Any] = []
    f2.add_done_callback(seen.append)  # already done: runs at once
    assert seen == [f2]


def test_log_append_time_and_acks_zero_results():
    acc = make(linger_ms=0)
    f1 = add(acc, A0, b"a", 5)
    (batch,) = acc.drain(leader_of, {1}, 10_000, 0)[1]
    batch.complete(-1, 999)
    assert f1.result() == RecordMetadata("a", 0, -1, 999)


def test_abort_undrained_fails_queued_futures():
    acc = make(linger_ms=1000)
    future = add(acc, A0, b"a")
    assert acc.abort_undrained(NotLeaderOrFollowerError("x")) == 1
    assert isinstance(future.exception(), NotLeaderOrFollowerError)
    with pytest.raises(NotLeaderOrFollowerError):
        future.result()
    assert not acc.has_undrained()
    assert acc.buffered_bytes == 0


def test_a_full_buffer_raises_buffer_exhausted_after_max_block_ms():
    # A batch header (61 bytes) and two records of 109 bytes, each held at 112 more, hold 503
    # of 600 bytes; a third record (estimated at 136 + 112, and 61 for the header of the batch
    # it may need) would not fit.
    acc = make(buffer_memory=600, max_block_ms=50)
    accepted = [add(acc, A0, b"x" * 100), add(acc, A0, b"x" * 100)]
    assert acc.buffered_bytes == 61 + 2 * (109 + RECORD_MEMORY_OVERHEAD) == 503
    with pytest.raises(BufferExhaustedError, match="buffer_memory"):
        add(acc, B0, b"z" * 100)
    # Nothing accepted was dropped: the batch is still queued with both records.
    assert counts(acc, A0) == [2]
    assert counts(acc, B0) == []
    assert not any(f.done() for f in accepted)


def test_a_blocked_send_goes_on_when_a_batch_is_done():
    acc = make(buffer_memory=600, max_block_ms=60_000, linger_ms=1000)
    add(acc, A0, b"x" * 100)
    add(acc, A0, b"x" * 100)
    blocked = threading.Event()
    result: list[object] = []

    def third() -> None:
        blocked.set()
        result.append(add(acc, A1, b"z" * 100))

    thread = threading.Thread(target=third)
    thread.start()
    assert blocked.wait(10)
    # It waits for memory, and the batches become sendable at once (no linger) meanwhile.
    while not acc.ready(leader_of, 0).nodes:
        thread.join(0.01)
    assert not result
    (batch,) = acc.drain(leader_of, {1}, 10_000, 0)[1]
    batch.complete(0, -1)
    acc.done(batch)
    thread.join(10)
    assert not thread.is_alive()
    assert counts(acc, A1) == [1]
    assert acc.buffered_bytes == 61 + 109 + RECORD_MEMORY_OVERHEAD


def test_close_releases_a_send_blocked_for_memory():
    acc = make(buffer_memory=300, max_block_ms=60_000)
    add(acc, A0, b"x" * 100)
    errors: list[BaseException] = []

    def blocked() -> None:
        try:
            add(acc, B0, b"y" * 100)
        except ProducerClosedError as exc:
            errors.append(exc)

    thread = threading.Thread(target=blocked)
    thread.start()
    acc.close()
    thread.join(10)
    assert len(errors) == 1


def test_memory_never_exceeds_buffer_memory():
    acc = make(batch_size=300, buffer_memory=3000, max_block_ms=0, linger_ms=0)
    accepted = 0
    peak = 0
    rng = random.Random(1)
    for _ in range(2000):
        tp = rng.choice([A0, A1, B0])
        try:
            add(acc, tp, b"v" * rng.randrange(1, 200))
            accepted += 1
        except BufferExhaustedError:
            drained = acc.drain(leader_of, {1, 2}, 10_000, 0)
            for batches in drained.values():
                for batch in batches:
                    batch.complete(0, -1)
                    acc.done(batch)
        peak = max(peak, acc.buffered_bytes)
    assert peak <= 3000
    assert accepted > 100


def test_a_batch_backing_off_goes_at_once_when_its_partition_has_a_new_leader():
    acc = make(linger_ms=0, retry_backoff_ms=500)
    add(acc, A0, b"a")
    add(acc, A1, b"b")
    drained = acc.drain(leader_of, {1, 2}, 10_000, 0)
    for (batch,) in drained.values():
        batch.attempts += 1
        acc.reenqueue(batch, 1000)
    assert acc.backing_off(1000) == {A0, A1}
    acc.skip_backoff({A0}, 1010)  # A0's leader changed (KIP-951): no more waiting
    assert acc.backing_off(1010) == {A1}
    assert set(acc.drain(leader_of, {1, 2}, 10_000, 1010)) == {1}
