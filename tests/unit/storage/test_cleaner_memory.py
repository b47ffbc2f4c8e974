"""The cleaner's memory is its dedupe buffer plus a fixed overhead: a log with more distinct
keys than the buffer holds is cleaned in several passes, each within the budget, and a log four
times larger costs no more memory.

Memory is measured with ``tracemalloc``: every allocation Python makes (the offset map's array,
buffers, batches, lists). Segment index mappings are files, not heap, and are not counted.
"""

from __future__ import annotations

import multiprocessing
import tracemalloc
from pathlib import Path

from odradek.clock import ManualClock
from storage import Log, LogConfig
from storage.config import CleanerConfig
from storage.log_cleaner import LogCleaner
from tests.unit.storage.compaction_helpers import Oracle, keyed_batch, read_log

TP = ("t", 0)
DEDUPE = 4 * 1024
IO_BUFFER = 16 * 1024
VALUE = 200
# Read chunk + output buffer, a few copies of the largest batch (decompressed, filtered,
# rebuilt), and Python's own objects for a pass (segments, stats, iterators).
OVERHEAD = 2 * IO_BUFFER + 4 * 32 * (VALUE + 40) + 96 * 1024


def build(
    tmp_path, name: str, keys: int, clock: ManualClock, segment_bytes: int
) -> tuple[Log, Oracle]:
    config = LogConfig(
        cleanup_policy="compact",
        segment_bytes=segment_bytes,
        segment_index_bytes=16 * 1024,
        file_delete_delay_ms=0,
    )
    log = Log.open(tmp_path / f"{name}-0", config, clock)
    oracle = Oracle()
    for r in range(2):
        for first in range(0, keys, 32):
            pairs = [
                (f"key-{k:07d}".encode(), f"{r}".encode() * VALUE)
                for k in range(first, min(first + 32, keys))
            ]
            info = log.append_as_leader(
                keyed_batch(pairs, clock.wall_ms(), "lz4" if r else "none"), leader_epoch=0
            )
            oracle.append(info.first_offset, pairs)
    log.roll()
    log.update_high_watermark(log.log_end_offset)
    return log, oracle


def clean_until_done(log: Log, cleaner: LogCleaner) -> tuple[int, int]:
    """Passes until the log is clean; returns (passes, traced peak above the start)."""
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        passes = 0
        while True:
            stats = cleaner.clean_log((log.topic, log.partition), log)
            assert stats is not None
            passes += 1
            offset_map = cleaner.offset_map
            assert offset_map is not None
            assert stats.map_entries <= offset_map.max_entries
            assert offset_map.memory_bytes <= DEDUPE
            if stats.end_offset == log.log_end_offset:
                break
        peak = tracemalloc.get_traced_memory()[1] - start
    finally:
        tracemalloc.stop()
    return passes, peak


def _clean_small_and_large(directory: str) -> tuple[int, int, int, int, int]:
    """Build and clean the two logs; ``(capacity, small passes, small peak, large passes,
    large peak)``. Checks both logs against their oracles."""
    tmp_path = Path(directory)
    clock = ManualClock()
    config = CleanerConfig(dedupe_buffer_bytes=DEDUPE, io_buffer_bytes=IO_BUFFER)
    # The same number of segments (each one's objects belong to the log, not the cleaner),
    # four times the keys and the bytes.
    small, small_oracle = build(tmp_path, "small", 300, clock, segment_bytes=20 * 1024)
    large, large_oracle = build(tmp_path, "large", 1_200, clock, segment_bytes=80 * 1024)
    assert abs(len(small.segments()) - len(large.segments())) <= 1

    cleaner = LogCleaner([tmp_path], config, clock)
    small_passes, small_peak = clean_until_done(small, cleaner)
    cleaner = LogCleaner([tmp_path], config, clock)
    large_passes, large_peak = clean_until_done(large, cleaner)
    for log, oracle, keys in ((small, small_oracle, 300), (large, large_oracle, 1_200)):
        records = oracle.check(log)
        assert len(records) == keys  # every key once
    assert cleaner.offset_map is not None
    return cleaner.offset_map.max_entries, small_passes, small_peak, large_passes, large_peak


def test_more_distinct_keys_than_the_buffer_holds_take_several_bounded_passes(tmp_path):
    # In a fresh interpreter: tracemalloc's peak counts every allocation, and one made by the
    # interpreter for the whole process (pathlib interns each file name; the table of
    # interned strings doubles, some 2 MB, when it crosses a size set by everything the
    # process ran before) would land in whichever test crosses it.
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        capacity, small_passes, small_peak, large_passes, large_peak = pool.apply(
            _clean_small_and_large, (str(tmp_path),)
        )
    assert 5 * capacity < 1_200
    assert small_passes >= 2 * 300 // capacity
    assert large_passes >= 2 * 1_200 // capacity
    assert small_peak <= DEDUPE + OVERHEAD, small_peak
    assert large_peak <= DEDUPE + OVERHEAD, large_peak
    # four times the keys and the bytes, not more memory
    assert large_peak <= small_peak + 16 * 1024, (small_peak, large_peak)


def test_the_map_is_allocated_once_at_its_budget():
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        cleaner = LogCleaner([], CleanerConfig(dedupe_buffer_bytes=1 << 20), ManualClock())
        offset_map = cleaner.allocate_offset_map()
        after = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert offset_map.memory_bytes <= 1 << 20
    assert after[0] - before <= (1 << 20) + 4096  # the table, and nothing like a second copy
    assert after[1] - before <= (1 << 20) + 4096 + 65536 * 8  # peak: one zero chunk at most


def test_read_log_helper_sees_a_clean_log(tmp_path):
    clock = ManualClock()
    log, oracle = build(tmp_path, "t", 100, clock, segment_bytes=32 * 1024)
    assert len(read_log(log)) == 200
    oracle.check(log)
