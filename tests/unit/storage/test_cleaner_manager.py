"""What the cleaner cleans: pure decisions (Kafka's LogCleanerManagerTest and the grouping
cases of LogCleanerTest, in our words)."""

from __future__ import annotations

from pathlib import Path

from storage.cleaner_manager import (
    LogSnapshot,
    SegmentSnapshot,
    cleanable_offsets,
    filthiest,
    group_segments_by_size,
    log_to_clean,
    max_compaction_delay,
)
from storage.config import LONG_MAX, LogConfig

NOW = 1_700_000_000_000
COMPACT = LogConfig(cleanup_policy="compact")


def seg(
    base: int,
    size: int = 100,
    largest_ts: int = 0,
    first_ts: int = -1,
    index_bytes: int = 0,
    time_index_bytes: int = 0,
) -> SegmentSnapshot:
    return SegmentSnapshot(
        base, size, largest_ts, first_ts, index_bytes, time_index_bytes, 0, Path(f"{base}.log")
    )


def log(bases_sizes, leo, hw=None, start=0, **kw) -> LogSnapshot:
    segments = tuple(seg(b, s, **kw) for b, s in bases_sizes)
    return LogSnapshot(segments, start, leo, leo if hw is None else hw)


def test_the_active_segment_is_never_cleanable():
    # LogCleanerManagerTest#testCleanableOffsetsActiveSegment
    snapshot = log([(0, 100), (10, 100), (20, 100)], leo=25)
    offsets = cleanable_offsets(snapshot, None, COMPACT, NOW)
    assert (offsets.first_dirty_offset, offsets.first_uncleanable_dirty_offset) == (0, 20)
    assert log_to_clean(snapshot, None, COMPACT, NOW).first_uncleanable_offset == 20


def test_nothing_at_or_above_the_high_watermark_is_cleanable():
    snapshot = log([(0, 100), (10, 100), (20, 100)], leo=25, hw=15)
    offsets = cleanable_offsets(snapshot, None, COMPACT, NOW)
    assert offsets.first_uncleanable_dirty_offset == 15
    # rounded down to the segment holding it
    to_clean = log_to_clean(snapshot, None, COMPACT, NOW)
    assert to_clean.first_uncleanable_offset == 10
    assert (to_clean.clean_bytes, to_clean.cleanable_bytes) == (0, 100)


def test_segments_newer_than_the_min_compaction_lag_are_not_cleanable():
    # LogCleanerManagerTest#testCleanableOffsetsForTime
    config = COMPACT.replace(min_compaction_lag_ms=60_000)
    segments = (
        seg(0, largest_ts=NOW - 120_000),
        seg(10, largest_ts=NOW - 30_000),  # too young
        seg(20, largest_ts=NOW - 200_000),
        seg(30, largest_ts=NOW),
    )
    snapshot = LogSnapshot(segments, 0, 35, 35)
    assert cleanable_offsets(snapshot, None, config, NOW).first_uncleanable_dirty_offset == 10


def test_a_checkpoint_out_of_range_is_reset_to_the_log_start():
    # LogCleanerManagerTest#testDirtyOffsetResetIfLargerThanEndOffset
    snapshot = log([(0, 100), (10, 100), (20, 100)], leo=25, start=5)
    beyond = cleanable_offsets(snapshot, 30, COMPACT, NOW)
    assert (beyond.first_dirty_offset, beyond.force_update_checkpoint) == (5, True)
    below = cleanable_offsets(snapshot, 2, COMPACT, NOW)
    assert (below.first_dirty_offset, below.force_update_checkpoint) == (5, True)
    fine = cleanable_offsets(snapshot, 12, COMPACT, NOW)
    assert (fine.first_dirty_offset, fine.force_update_checkpoint) == (12, False)
    absent = cleanable_offsets(snapshot, None, COMPACT, NOW)
    assert (absent.first_dirty_offset, absent.force_update_checkpoint) == (5, False)


def test_dirty_ratio_counts_clean_and_cleanable_bytes_without_the_active_segment():
    # LogCleanerTest#testLogToCleanWithUncleanableSection
    snapshot = log([(0, 100), (10, 200), (20, 300), (30, 400), (40, 1000)], leo=45)
    to_clean = log_to_clean(snapshot, 20, COMPACT, NOW)
    assert (to_clean.clean_bytes, to_clean.cleanable_bytes) == (300, 700)
    assert to_clean.cleanable_ratio == 0.7
    assert to_clean.is_cleanable(0.5)
    assert not to_clean.is_cleanable(0.7)  # strictly above the minimum


def test_a_dirty_offset_inside_a_segment_counts_it_on_both_sides():
    snapshot = log([(0, 100), (10, 200), (20, 300)], leo=25)
    to_clean = log_to_clean(snapshot, 15, COMPACT, NOW)
    assert (to_clean.clean_bytes, to_clean.cleanable_bytes) == (300, 200)


def test_the_max_compaction_lag_makes_a_log_due_whatever_its_ratio():
    config = COMPACT.replace(max_compaction_lag_ms=60_000, min_cleanable_dirty_ratio=0.99)
    old = LogSnapshot((seg(0, first_ts=NOW - 100_000), seg(10, first_ts=NOW)), 0, 15, 15)
    assert max_compaction_delay(old, 0, config, NOW) == 40_000
    to_clean = log_to_clean(old, 0, config, NOW)
    assert to_clean.need_compaction_now and to_clean.is_cleanable(0.99)
    young = LogSnapshot((seg(0, first_ts=NOW - 10_000), seg(10, first_ts=NOW)), 0, 15, 15)
    assert max_compaction_delay(young, 0, config, NOW) == 0
    assert max_compaction_delay(old, 0, COMPACT.replace(max_compaction_lag_ms=LONG_MAX), NOW) == 0
    # a log with nothing cleanable is not due even past the lag
    nothing = log_to_clean(old, 10, config, NOW)
    assert nothing.cleanable_bytes == 0 and not nothing.is_cleanable(0.99)


def test_the_filthiest_due_log_is_chosen():
    a = log_to_clean(log([(0, 100), (10, 100), (20, 100)], leo=25), 10, COMPACT, NOW)  # 0.5
    b = log_to_clean(log([(0, 100), (10, 300), (20, 100)], leo=25), 10, COMPACT, NOW)  # 0.75
    c = log_to_clean(log([(0, 100), (10, 900), (20, 100)], leo=25), 10, COMPACT, NOW)  # 0.9
    strict = COMPACT.replace(min_cleanable_dirty_ratio=0.95)
    assert filthiest([("a", a, COMPACT), ("b", b, COMPACT), ("c", c, COMPACT)]) == "c"
    assert filthiest([("a", a, COMPACT), ("b", b, COMPACT), ("c", c, strict)]) == "b"
    assert filthiest([("a", a, COMPACT)]) is None  # 0.5 is not above 0.5
    empty = log_to_clean(log([(0, 0)], leo=0), None, COMPACT, NOW)
    assert filthiest([("e", empty, COMPACT.replace(min_cleanable_dirty_ratio=0.0))]) is None


def test_segments_are_grouped_within_the_size_limits():
    # LogCleanerTest#testSegmentGrouping
    segments = [seg(i * 10, 400) for i in range(10)]
    groups = group_segments_by_size(
        segments, max_size=1000, max_index_size=1000, first_uncleanable_offset=100
    )
    assert [[s.base_offset for s in g] for g in groups] == [
        [0, 10],
        [20, 30],
        [40, 50],
        [60, 70],
        [80, 90],
    ]
    singles = group_segments_by_size(
        segments, max_size=399, max_index_size=1000, first_uncleanable_offset=100
    )
    assert [len(g) for g in singles] == [1] * 10
    everything = group_segments_by_size(
        segments, max_size=10_000, max_index_size=1000, first_uncleanable_offset=100
    )
    assert [len(g) for g in everything] == [10]


def test_index_sizes_limit_the_groups_too():
    segments = [seg(i * 10, 10, index_bytes=80, time_index_bytes=12) for i in range(6)]
    by_offset_index = group_segments_by_size(
        segments, max_size=10_000, max_index_size=160, first_uncleanable_offset=60
    )
    assert [len(g) for g in by_offset_index] == [2, 2, 2]
    segments = [seg(i * 10, 10, index_bytes=8, time_index_bytes=120) for i in range(6)]
    by_time_index = group_segments_by_size(
        segments, max_size=10_000, max_index_size=250, first_uncleanable_offset=60
    )
    assert [len(g) for g in by_time_index] == [2, 2, 2]


def test_a_group_spans_at_most_int32_offsets():
    # LogCleanerTest#testSegmentGroupingWithSparseOffsets
    big = 2**31
    # A segment's last offset is the next one's base - 1 (the first uncleanable - 1 for the
    # last): [0, big - 11] | [big - 10, big + 4] [big + 5, 2big - 21] | [2big - 20, 2big + 19]
    segments = [seg(0), seg(big - 10), seg(big + 5), seg(2 * big - 20)]
    groups = group_segments_by_size(
        segments, max_size=10_000, max_index_size=10_000, first_uncleanable_offset=2 * big + 20
    )
    assert [[s.base_offset for s in g] for g in groups] == [
        [0],
        [big - 10, big + 5],
        [2 * big - 20],
    ]
    # an empty segment joins whatever its offsets
    with_empty = [seg(0), seg(big + 100, size=0), seg(big + 200, size=0)]
    groups = group_segments_by_size(
        with_empty, max_size=10_000, max_index_size=10_000, first_uncleanable_offset=big + 300
    )
    assert [len(g) for g in groups] == [3]
