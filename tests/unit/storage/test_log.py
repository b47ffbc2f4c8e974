"""Log: appends, reads, rolls, truncation, timestamps, flush policy (Kafka UnifiedLogTest)."""

from __future__ import annotations

import pytest

from odradek.errors import (
    CorruptRecordError,
    InvalidRecordError,
    MessageTooLargeError,
    OffsetOutOfRangeError,
    RecordListTooLargeError,
)
from odradek.records import Record, RecordBatch, TimestampType, build_batch, read_batches
from storage import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, MAX_TIMESTAMP, LogConfig
from storage.errors import OffsetsOutOfOrderError, UnexpectedAppendOffsetError
from tests.storage_helpers import all_records, make_batch, open_log, value_for


def test_leader_assigns_offsets_and_stamps_the_epoch(tmp_path, clock):
    log = open_log(tmp_path, clock)
    first = log.append_as_leader(make_batch(3, first=0), leader_epoch=7)
    second = log.append_as_leader(make_batch(2, first=3), leader_epoch=8)
    assert (first.first_offset, first.last_offset) == (0, 2)
    assert (second.first_offset, second.last_offset) == (3, 4)
    assert log.log_end_offset == 5
    batches = list(read_batches(log.read(0, 1 << 20).records))
    assert [(b.base_offset, b.last_offset, b.partition_leader_epoch) for b in batches] == [
        (0, 2, 7),
        (3, 4, 8),
    ]
    for b in batches:
        b.validate()  # base offset and epoch lie outside the CRC
    assert all_records(log) == [(i, value_for(i)) for i in range(5)]


def test_leader_append_keeps_client_bytes_apart_from_offset_and_epoch(tmp_path, clock):
    log = open_log(tmp_path, clock)
    sent = make_batch(4, compression="gzip")
    log.append_as_leader(sent, leader_epoch=3)
    stored = log.read(0, 1 << 20).records
    assert bytes(stored)[16:] == sent[16:]
    assert bytes(stored)[8:12] == sent[8:12]


def test_read_returns_whole_batch_containing_offset(tmp_path, clock):
    log = open_log(tmp_path, clock)
    log.append_as_leader(make_batch(5), leader_epoch=0)
    log.append_as_leader(make_batch(5, first=5), leader_epoch=0)
    batches = list(read_batches(log.read(7, 1 << 20).records))
    assert batches[0].base_offset == 5  # the batch containing 7, not one starting at 7


def test_read_boundaries(tmp_path, clock):
    log = open_log(tmp_path, clock)
    log.append_as_leader(make_batch(3), leader_epoch=0)
    assert log.read(3, 1000).records == b""  # at the LEO: empty, not an error
    with pytest.raises(OffsetOutOfRangeError):
        log.read(4, 1000)
    log.update_high_watermark(3)
    log.delete_records(2)
    with pytest.raises(OffsetOutOfRangeError):
        log.read(1, 1000)


def test_read_is_bounded_by_max_offset(tmp_path, clock):
    log = open_log(tmp_path, clock)
    for i in range(4):
        log.append_as_leader(make_batch(2, first=2 * i), leader_epoch=0)
    info = log.read(0, 1 << 20, max_offset=4)
    assert [b.base_offset for b in read_batches(info.records)] == [0, 2]
    assert log.read(4, 1 << 20, max_offset=4).records == b""  # between HW and LEO: empty
    assert log.read(5, 1 << 20, max_offset=4).records == b""


def test_a_read_as_a_slice_names_the_same_bytes_in_the_segment_file(tmp_path, clock):
    log = open_log(tmp_path, clock, LogConfig(segment_bytes=2000))
    for i in range(12):
        log.append_as_leader(make_batch(3, first=3 * i, value_size=50), leader_epoch=0)
    assert log.num_segments > 1
    for offset, max_bytes, bound in ((0, 1 << 20, None), (7, 300, None), (20, 1 << 20, 30)):
        read = log.read(offset, max_bytes, max_offset=bound)
        sliced = log.read(offset, max_bytes, max_offset=bound, as_slice=True)
        assert sliced.records == b"" and sliced.slice is not None
        assert sliced.slice.read() == read.records
        assert len(sliced.slice) == len(read.records)
        assert sliced.first_entry_incomplete == read.first_entry_incomplete
    at_end = log.read(log.log_end_offset, 1000, as_slice=True)
    assert at_end.records == b"" and at_end.slice is None


def test_min_one_message_and_partial_reads(tmp_path, clock):
    log = open_log(tmp_path, clock)
    log.append_as_leader(make_batch(10, value_size=100), leader_epoch=0)
    size = log.size
    whole = log.read(0, 1, min_one_message=True)
    assert len(whole.records) == size and not whole.first_entry_incomplete
    partial = log.read(0, 1, min_one_message=False)
    assert len(partial.records) == 1 and partial.first_entry_incomplete


def test_roll_by_size_names_segments_by_base_offset(tmp_path, clock):
    batch = make_batch(5)
    log = open_log(tmp_path, clock, LogConfig(segment_bytes=len(batch) * 3))
    for i in range(7):
        log.append_as_leader(make_batch(5, first=5 * i), leader_epoch=0)
    bases = [s.base_offset for s in log.segments()]
    assert bases == [0, 15, 30]
    names = sorted(p.name for p in (tmp_path / "topic-0").glob("*.log"))
    assert names == [f"{b:020d}.log" for b in bases]
    # each roll flushed the finished segments: the recovery point is the active base
    assert log.recovery_point == 30
    assert all_records(log) == [(i, value_for(i)) for i in range(35)]


def test_roll_by_record_time(tmp_path, clock):
    log = open_log(tmp_path, clock, LogConfig(segment_ms=1000))
    log.append_as_leader(make_batch(1, timestamp=10_000), leader_epoch=0)
    log.append_as_leader(make_batch(1, timestamp=10_999), leader_epoch=0)
    assert log.num_segments == 1
    log.append_as_leader(make_batch(1, timestamp=11_001), leader_epoch=0)
    assert log.num_segments == 2
    clock.advance(10**9)  # wall time does not matter when records carry timestamps
    log.append_as_leader(make_batch(1, timestamp=11_002), leader_epoch=0)
    assert log.num_segments == 2


def test_roll_by_wall_time_without_record_timestamps(tmp_path, clock):
    log = open_log(tmp_path, clock, LogConfig(segment_ms=1000))
    log.append_as_leader(make_batch(1, timestamp=None), leader_epoch=0)
    clock.advance(999)
    log.append_as_leader(make_batch(1, timestamp=None), leader_epoch=0)
    assert log.num_segments == 1
    clock.advance(2)
    log.append_as_leader(make_batch(1, timestamp=None), leader_epoch=0)
    assert log.num_segments == 2


def test_empty_segment_never_rolls_on_time(tmp_path, clock):
    log = open_log(tmp_path, clock, LogConfig(segment_ms=1))
    clock.advance(10_000)
    log.append_as_leader(make_batch(1, timestamp=None), leader_epoch=0)
    assert log.num_segments == 1


def test_jitter_is_drawn_per_segment_below_the_bound(tmp_path, clock):
    import random

    config = LogConfig(segment_ms=1000, segment_jitter_ms=400)
    log = open_log(tmp_path, clock, config, rng=random.Random(7))
    jitters = set()
    for i in range(20):
        jitters.add(log.active_segment.roll_jitter_ms)
        log.append_as_leader(make_batch(1, timestamp=i * 5000), leader_epoch=0)
    assert all(0 <= j < 400 for j in jitters) and len(jitters) > 1


def test_first_batch_of_a_segment_gets_no_index_entry(tmp_path, clock):
    # Kafka testIndexResizingAtTruncation: 10 batches with interval = batch size - 1 → 9 entries
    batch = make_batch(1)
    log = open_log(tmp_path, clock, LogConfig(index_interval_bytes=len(batch) - 1))
    for i in range(10):
        log.append_as_leader(make_batch(1, first=i), leader_epoch=0)
    assert log.active_segment.offset_index.entries == 9
    assert log.active_segment.offset_index.entry(0).position == len(batch)


def test_every_index_entry_points_at_its_batch(tmp_path, clock):
    log = open_log(tmp_path, clock, LogConfig(index_interval_bytes=200))
    for i in range(50):
        log.append_as_leader(make_batch(3, first=3 * i), leader_epoch=0)
    segment = log.active_segment
    data = segment.log.read(0, segment.size)
    for n in range(segment.offset_index.entries):
        entry = segment.offset_index.entry(n)
        batch = RecordBatch(data, entry.position)
        assert batch.last_offset == entry.offset


def test_truncate_removes_whole_batches_and_later_segments(tmp_path, clock):
    batch = make_batch(5)
    log = open_log(tmp_path, clock, LogConfig(segment_bytes=len(batch) * 2))
    for i in range(6):
        log.append_as_leader(make_batch(5, first=5 * i), leader_epoch=0)
    log.update_high_watermark(30)
    assert [s.base_offset for s in log.segments()] == [0, 10, 20]
    assert log.truncate_to(12)  # inside the batch 10..14: the whole batch goes
    assert log.log_end_offset == 10
    assert [s.base_offset for s in log.segments()] == [0, 10]
    assert log.high_watermark == 10 and log.recovery_point <= 10
    assert not log.truncate_to(10)
    assert all_records(log) == [(i, value_for(i)) for i in range(10)]
    info = log.append_as_leader(make_batch(2, first=10), leader_epoch=1)
    assert info.first_offset == 10


def test_truncate_below_first_segment_starts_afresh(tmp_path, clock):
    log = open_log(tmp_path, clock)
    log.truncate_fully_and_start_at(100)
    log.append_as_leader(make_batch(3), leader_epoch=0)
    assert (log.log_start_offset, log.log_end_offset) == (100, 103)
    log.truncate_to(50)
    assert (log.log_start_offset, log.log_end_offset, log.high_watermark) == (50, 50, 50)
    assert [s.base_offset for s in log.segments()] == [50]


def test_find_offset_by_timestamp(tmp_path, clock):
    # Kafka LogSegmentTest#testFindOffsetByTimestamp, with offsets 40..49 and ts = offset * 10
    log = open_log(tmp_path, clock, LogConfig(index_interval_bytes=1))
    log.truncate_fully_and_start_at(40)
    for offset in range(40, 50):
        log.append_as_leader(make_batch(1, timestamp=offset * 10), leader_epoch=0)
    expected = {420: 42, 421: 43, 430: 43, 431: 44, 401: 41, 399: 40}
    for target, offset in expected.items():
        found = log.fetch_offset_by_timestamp(target)
        assert found is not None and found.offset == offset, target
        assert found.timestamp == offset * 10
    assert log.fetch_offset_by_timestamp(491) is None
    assert log.fetch_offset_by_timestamp(EARLIEST_TIMESTAMP).offset == 40  # type: ignore[union-attr]
    assert log.fetch_offset_by_timestamp(LATEST_TIMESTAMP).offset == 50  # type: ignore[union-attr]
    found = log.fetch_offset_by_timestamp(MAX_TIMESTAMP)
    assert found is not None and (found.timestamp, found.offset) == (490, 49)


def test_timestamp_lookup_finds_record_inside_a_batch(tmp_path, clock):
    log = open_log(tmp_path, clock)
    log.append_as_leader(make_batch(10, timestamp=1000), leader_epoch=0)  # ts 1000..1009
    found = log.fetch_offset_by_timestamp(1004)
    assert found is not None and (found.offset, found.timestamp) == (4, 1004)
    found = log.fetch_offset_by_timestamp(MAX_TIMESTAMP)
    assert found is not None and (found.offset, found.timestamp) == (9, 1009)


def test_log_append_time_stamps_the_broker_time(tmp_path, clock):
    log = open_log(tmp_path, clock, LogConfig(message_timestamp_type="log_append_time"))
    info = log.append_as_leader(make_batch(3, timestamp=5), leader_epoch=0)
    assert info.log_append_time == clock.wall_ms()
    (batch,) = read_batches(log.read(0, 1 << 20).records)
    batch.validate()
    assert batch.timestamp_type == TimestampType.LOG_APPEND_TIME
    assert {r.timestamp for r in batch.records()} == {clock.wall_ms()}


def test_bad_batches_are_rejected_and_nothing_is_written(tmp_path, clock):
    log = open_log(tmp_path, clock, LogConfig(max_message_bytes=500, segment_bytes=2000))
    good = make_batch(1)
    corrupt = bytearray(make_batch(2))
    corrupt[-1] ^= 0xFF
    with pytest.raises(CorruptRecordError):
        log.append_as_leader(good + bytes(corrupt), leader_epoch=0)
    with pytest.raises(MessageTooLargeError):
        log.append_as_leader(make_batch(1, value_size=600), leader_epoch=0)
    with pytest.raises(RecordListTooLargeError):
        log.append_as_leader(b"".join(make_batch(1, value_size=400) for _ in range(5)), 0)
    with pytest.raises(InvalidRecordError):
        log.append_as_leader(make_batch(1, base_offset=5), leader_epoch=0)
    with pytest.raises(InvalidRecordError):
        log.append_as_leader(b"", leader_epoch=0)
    assert log.log_end_offset == 0 and log.size == 0
    log.append_as_leader(good, leader_epoch=0)
    assert log.log_end_offset == 1


def test_compacted_log_rejects_records_without_key(tmp_path, clock):
    log = open_log(tmp_path, clock, LogConfig(cleanup_policy="compact"))
    with pytest.raises(InvalidRecordError):
        log.append_as_leader(make_batch(2, keys=False), leader_epoch=0)
    log.append_as_leader(make_batch(2, keys=True), leader_epoch=0)
    assert log.log_end_offset == 2


def test_follower_append_keeps_offsets_and_allows_gaps(tmp_path, clock):
    log = open_log(tmp_path, clock)
    log.append_as_follower(make_batch(3, base_offset=0))
    log.append_as_follower(make_batch(2, base_offset=10))  # a gap, as after compaction
    assert log.log_end_offset == 12
    assert [o for o, _ in all_records(log)] == [0, 1, 2, 10, 11]
    with pytest.raises(UnexpectedAppendOffsetError):
        log.append_as_follower(make_batch(1, base_offset=11))
    with pytest.raises(OffsetsOutOfOrderError):
        log.append_as_follower(make_batch(2, base_offset=20) + make_batch(2, base_offset=15))
    assert log.log_end_offset == 12


def test_follower_append_ignores_a_trailing_partial_batch(tmp_path, clock):
    log = open_log(tmp_path, clock)
    data = make_batch(2, base_offset=0) + make_batch(2, base_offset=2)
    info = log.append_as_follower(data[:-5])
    assert (info.first_offset, info.last_offset) == (0, 1)
    assert log.log_end_offset == 2


def test_follower_rolls_when_offsets_would_overflow_the_segment(tmp_path, clock):
    log = open_log(tmp_path, clock)
    log.append_as_follower(make_batch(1, base_offset=0))
    log.append_as_follower(make_batch(1, base_offset=2**31 + 5))
    assert [s.base_offset for s in log.segments()] == [0, 2**31 + 5]


def test_flush_messages_policy_moves_the_recovery_point(tmp_path, clock):
    log = open_log(tmp_path, clock, LogConfig(flush_messages=5))
    log.append_as_leader(make_batch(3), leader_epoch=0)
    assert log.recovery_point == 0
    log.append_as_leader(make_batch(3), leader_epoch=0)
    assert log.recovery_point == 6


def test_flush_ms_policy(tmp_path, clock):
    log = open_log(tmp_path, clock, LogConfig(flush_ms=1000))
    log.append_as_leader(make_batch(3), leader_epoch=0)
    assert not log.maybe_flush()
    clock.advance(1000)
    assert log.maybe_flush()
    assert log.recovery_point == 3


def test_high_watermark_is_clamped_and_only_incremented_by_leaders(tmp_path, clock):
    log = open_log(tmp_path, clock)
    log.append_as_leader(make_batch(5), leader_epoch=0)
    assert log.update_high_watermark(99) == 5
    assert not log.maybe_increment_high_watermark(3)
    assert log.high_watermark == 5
    with pytest.raises(ValueError):
        log.maybe_increment_high_watermark(6)


def test_closed_log_refuses_work(tmp_path, clock):
    log = open_log(tmp_path, clock)
    log.close()
    with pytest.raises(ValueError, match="closed"):
        log.append_as_leader(make_batch(1), leader_epoch=0)
    log.close()


def test_clean_reopen_scans_nothing_and_keeps_everything(tmp_path, clock):
    config = LogConfig(segment_bytes=2000, index_interval_bytes=100)
    log = open_log(tmp_path, clock, config)
    for i in range(40):
        log.append_as_leader(make_batch(2, first=2 * i), leader_epoch=0)
    log.flush()
    log.close()
    reopened = open_log(tmp_path, clock, config, had_clean_shutdown=True, recovery_point=80)
    assert reopened.recovery_bytes_read == 0
    assert reopened.log_end_offset == 80
    assert reopened.recovery_point == 80
    assert all_records(reopened) == [(i, value_for(i)) for i in range(80)]
    info = reopened.append_as_leader(make_batch(1, first=80), leader_epoch=0)
    assert info.first_offset == 80


def test_records_helper_builds_expected_batches():
    batch = make_batch(2, first=4, timestamp=100)
    (parsed,) = read_batches(batch)
    assert [(r.offset, r.key, r.value, r.timestamp) for r in parsed.records()] == [
        (0, b"k000004", value_for(4), 100),
        (1, b"k000005", value_for(5), 101),
    ]
    assert build_batch([Record(b"a", b"b")])  # the SDK's default arguments work


def test_leader_rejects_trailing_bytes_that_are_not_a_batch(tmp_path, clock):
    log = open_log(tmp_path, clock)
    with pytest.raises(CorruptRecordError):
        log.append_as_leader(make_batch(2) + b"\x00" * 70, leader_epoch=0)
    with pytest.raises(CorruptRecordError):
        log.append_as_leader(make_batch(2)[:-3], leader_epoch=0)
    assert log.log_end_offset == 0 and log.size == 0


def test_reads_of_batches_larger_than_the_fetch(tmp_path, clock):
    # The single-read fast path cannot hold these; the scan path must answer the same.
    log = open_log(tmp_path, clock, LogConfig(index_interval_bytes=100))
    for i in range(6):
        log.append_as_leader(make_batch(200, first=200 * i, value_size=100), leader_epoch=0)
    sizes = [b.size_in_bytes for b in read_batches(log.read(0, 1 << 22).records)]
    assert min(sizes) > 100 + 100 + 2048 + 1
    for offset in (0, 199, 200, 650, 1199):
        whole = log.read(offset, 1, min_one_message=True)
        (batch,) = read_batches(whole.records)
        assert batch.base_offset <= offset <= batch.last_offset
        assert len(whole.records) == batch.size_in_bytes
        partial = log.read(offset, 10, min_one_message=False)
        assert len(partial.records) == 10 and partial.first_entry_incomplete
    two = log.read(200, sizes[1] + sizes[2])
    assert [b.base_offset for b in read_batches(two.records)] == [200, 400]
    assert all_records(log) == [(i, value_for(i, 100)) for i in range(1200)]
