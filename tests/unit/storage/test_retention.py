"""Retention: time, size, log start offset, delete-records; never past the high watermark."""

from __future__ import annotations

import pytest

from odradek.errors import OffsetOutOfRangeError
from storage import LogConfig
from storage.retention import RetentionReason, SegmentSummary, deletable_segments
from tests.storage_helpers import all_records, make_batch, open_log, value_for

DAY = 24 * 3600 * 1000


def _fill(log, segments: int, per_segment: int = 5, timestamp=None):
    for i in range(segments):
        ts = timestamp(i) if timestamp else 1_000
        log.append_as_leader(make_batch(per_segment, first=i * per_segment, timestamp=ts), 0)
        log.roll()
    log.update_high_watermark(log.log_end_offset)


def test_size_retention_keeps_at_least_retention_bytes(tmp_path, clock):
    # Kafka shouldDeleteSizeBasedSegments: 3 segments of 5 records, retention = 10 records' bytes
    size = len(make_batch(5))
    config = LogConfig(retention_bytes=2 * size, retention_ms=-1, file_delete_delay_ms=0)
    log = open_log(tmp_path, clock, config)
    for i in range(3):
        log.append_as_leader(make_batch(5, first=5 * i), 0)
        if i < 2:
            log.roll()
    log.update_high_watermark(15)
    assert log.delete_old_segments() == 1
    assert [s.base_offset for s in log.segments()] == [5, 10]
    assert log.log_start_offset == 5
    assert log.log_end_offset == 15  # retention never moves the log end


def test_time_retention_uses_the_largest_record_timestamp_not_mtime(tmp_path, clock):
    now = clock.wall_ms()
    config = LogConfig(retention_ms=DAY, file_delete_delay_ms=0)
    log = open_log(tmp_path, clock, config)
    _fill(log, 3, timestamp=lambda i: [now - 3 * DAY, now - 2 * DAY, now][i])
    log.segments()[0].log.set_last_modified_ms(now)  # a fresh mtime must not save it
    clock.advance(10)
    assert log.delete_old_segments() == 2
    assert log.log_start_offset == 10


def test_time_retention_falls_back_to_mtime_without_record_timestamps(tmp_path, clock):
    config = LogConfig(retention_ms=1000, file_delete_delay_ms=0)
    log = open_log(tmp_path, clock, config)
    log.append_as_leader(make_batch(2, timestamp=None), 0)
    log.roll()
    log.append_as_leader(make_batch(2, first=2, timestamp=None), 0)
    log.update_high_watermark(4)
    first = log.segments()[0]
    first.log.set_last_modified_ms(clock.wall_ms() - 5000)
    log.segments()[1].log.set_last_modified_ms(clock.wall_ms())
    assert log.delete_old_segments() == 1
    assert log.log_start_offset == 2


def test_retention_never_passes_the_high_watermark(tmp_path, clock):
    config = LogConfig(retention_ms=1, file_delete_delay_ms=0)
    log = open_log(tmp_path, clock, config)
    _fill(log, 3, timestamp=lambda i: 0)
    log.update_high_watermark(7)  # inside the second segment
    assert log.delete_old_segments() == 1
    assert [s.base_offset for s in log.segments()] == [5, 10, 15]
    assert log.log_start_offset == 5


def test_expiring_everything_rolls_rather_than_deleting_the_active_segment(tmp_path, clock):
    config = LogConfig(retention_ms=1, file_delete_delay_ms=0)
    log = open_log(tmp_path, clock, config)
    log.append_as_leader(make_batch(5, timestamp=0), 0)
    log.update_high_watermark(5)
    assert log.delete_old_segments() == 1
    assert [s.base_offset for s in log.segments()] == [5]
    assert (log.log_start_offset, log.log_end_offset) == (5, 5)
    assert log.delete_old_segments() == 0  # an empty active segment is never deleted
    assert log.append_as_leader(make_batch(1), 0).first_offset == 5


def test_delete_records_moves_log_start_then_retention_removes_segments(tmp_path, clock):
    config = LogConfig(file_delete_delay_ms=0, retention_ms=-1, cleanup_policy="compact")
    log = open_log(tmp_path, clock, config)
    _fill(log, 3)
    with pytest.raises(OffsetOutOfRangeError):
        log.delete_records(16)
    assert log.delete_records(12) == 12
    with pytest.raises(OffsetOutOfRangeError):
        log.read(11, 100)
    assert all_records(log)[0] == (12, value_for(12))
    # the log-start-offset rule applies even without the delete policy
    assert log.delete_old_segments() == 2
    assert [s.base_offset for s in log.segments()] == [10, 15]
    assert log.log_start_offset == 12


def test_compact_only_policy_ignores_time_and_size(tmp_path, clock):
    config = LogConfig(retention_ms=1, retention_bytes=1, cleanup_policy="compact")
    log = open_log(tmp_path, clock, config)
    _fill(log, 2, timestamp=lambda i: 0)
    assert log.delete_old_segments() == 0


def test_deleted_segments_are_renamed_then_removed_after_the_delay(tmp_path, clock):
    config = LogConfig(retention_ms=1, file_delete_delay_ms=60_000)
    log = open_log(tmp_path, clock, config)
    _fill(log, 2, timestamp=lambda i: 0)
    directory = tmp_path / "topic-0"
    assert log.delete_old_segments() == 2
    deleted = sorted(p.name for p in directory.glob("*.deleted"))
    assert deleted == [
        f"{b:020d}{suffix}.deleted" for b in (0, 5) for suffix in (".index", ".log", ".timeindex")
    ]
    clock.advance(59_999)
    assert log.delete_pending_files() == 0
    clock.advance(1)
    assert log.delete_pending_files() == 2
    assert not list(directory.glob("*.deleted"))


def test_deletable_segments_is_a_pure_decision():
    config = LogConfig(retention_ms=100)
    segs = [SegmentSummary(0, 10, 50), SegmentSummary(10, 10, 500), SegmentSummary(20, 0, -1)]
    decision = deletable_segments(
        segs, log_end_offset=20, high_watermark=20, log_start_offset=0, config=config, now_ms=300
    )
    assert decision == (RetentionReason.TIME, [segs[0]])
    assert (
        deletable_segments(
            segs, log_end_offset=20, high_watermark=5, log_start_offset=0, config=config, now_ms=300
        )
        is None
    )
    decision = deletable_segments(
        segs, log_end_offset=20, high_watermark=20, log_start_offset=20, config=config, now_ms=0
    )
    assert decision == (RetentionReason.LOG_START_OFFSET, segs[:2])
