"""Cleaning real logs (Kafka's LogCleanerTest and LogCleanerIntegrationTest cases, in our
words): what survives, where passes end, segment grouping, tombstone lifetimes, checkpoints,
and what happens to a log changed while it is being cleaned."""

from __future__ import annotations

import threading

import pytest

from odradek.clock import ManualClock, SystemClock
from odradek.errors import InvalidRecordError
from odradek.records import RecordBatch, read_batches
from storage import Log, LogConfig
from storage.checkpoint_file import OffsetCheckpointFile
from storage.config import CleanerConfig
from storage.log_cleaner import CLEANER_OFFSET_CHECKPOINT, LogCleaner
from tests.unit.storage.compaction_helpers import Oracle, keyed_batch, live, read_log

TP = ("t", 0)
DAY = 24 * 3600 * 1000


def make_log(tmp_path, clock, **config) -> Log:
    defaults = {"cleanup_policy": "compact", "segment_bytes": 1024, "file_delete_delay_ms": 0}
    return Log.open(tmp_path / "t-0", LogConfig(**{**defaults, **config}), clock)


def append(log: Log, oracle: Oracle, pairs, timestamp=None, compression="none") -> None:
    info = log.append_as_leader(keyed_batch(pairs, timestamp, compression), leader_epoch=0)
    oracle.append(info.first_offset, pairs)


def fill(log: Log, oracle: Oracle, keys: int, rounds: int, clock: ManualClock, **kw) -> None:
    for r in range(rounds):
        for k in range(keys):
            append(log, oracle, [(f"k{k}".encode(), f"v{r}-{k}".encode())], clock.wall_ms(), **kw)


def commit(log: Log) -> None:
    log.roll()
    log.update_high_watermark(log.log_end_offset)


def cleaner(tmp_path, clock, **config) -> LogCleaner:
    return LogCleaner(
        [tmp_path], CleanerConfig(**{"dedupe_buffer_bytes": 1 << 16, **config}), clock
    )


def test_cleaning_keeps_the_latest_record_of_every_key_at_its_offset(tmp_path, clock):
    log = make_log(tmp_path, clock)
    oracle = Oracle()
    fill(log, oracle, keys=10, rounds=8, clock=clock)
    commit(log)
    size_before, leo = log.size, log.log_end_offset
    stats = cleaner(tmp_path, clock).clean_log(TP, log)
    assert stats is not None and stats.end_offset == leo
    records = oracle.check(log)
    assert [r.offset for r in records] == sorted(oracle.latest.values())
    assert log.size < size_before / 4
    assert (log.log_start_offset, log.log_end_offset) == (0, leo)


def test_reads_at_removed_offsets_return_the_next_surviving_batch(tmp_path, clock):
    # UnifiedLogTest#testReadAtLogGap
    log = make_log(tmp_path, clock)
    oracle = Oracle()
    fill(log, oracle, keys=3, rounds=5, clock=clock)
    commit(log)
    cleaner(tmp_path, clock).clean_log(TP, log)
    survivors = sorted(oracle.latest.values())  # 12, 13, 14
    batches = list(read_batches(log.read(0, 1 << 20).records))
    assert batches[0].base_offset == survivors[0]
    assert read_log(log, from_offset=5)[0].offset == survivors[0]


def test_the_active_segment_and_the_uncommitted_tail_are_never_cleaned(tmp_path, clock):
    log = make_log(tmp_path, clock)
    oracle = Oracle()
    fill(log, oracle, keys=4, rounds=6, clock=clock)
    log.roll()
    hw = log.log_end_offset
    log.update_high_watermark(hw)
    fill(log, oracle, keys=4, rounds=6, clock=clock)  # above the HW, partly in the active
    uncleanable = [r for r in read_log(log) if r.offset >= hw]
    cleaner(tmp_path, clock).clean_log(TP, log)
    after = read_log(log)
    assert [r for r in after if r.offset >= hw] == uncleanable
    # below the HW every key appears once
    below = [r.key for r in after if r.offset < hw]
    assert len(below) == len(set(below)) == 4
    oracle.check(log)


def test_a_tombstone_survives_the_first_pass_and_goes_after_delete_retention(tmp_path, clock):
    # LogCleanerTest#testCleaningWithDeletes, #testCleanTombstone
    log = make_log(tmp_path, clock, delete_retention_ms=DAY, min_cleanable_dirty_ratio=0.0)
    oracle = Oracle()
    fill(log, oracle, keys=5, rounds=3, clock=clock)
    append(log, oracle, [(b"k1", None)], clock.wall_ms())
    commit(log)
    lc = cleaner(tmp_path, clock)
    lc.clean_log(TP, log)
    tombstones = [r for r in read_log(log) if r.value is None]
    assert [(r.key, r.horizon) for r in tombstones] == [(b"k1", clock.wall_ms() + DAY)]
    assert b"k1" not in live(read_log(log))

    def another_pass() -> None:
        fill(log, oracle, keys=1, rounds=1, clock=clock)  # something dirty to clean
        commit(log)
        assert lc.clean_log(TP, log) is not None

    clock.advance(DAY - 1)
    another_pass()
    assert [r.key for r in read_log(log) if r.value is None] == [b"k1"]
    clock.advance(1)
    another_pass()
    assert [r for r in read_log(log) if r.value is None] == []
    oracle.check(log)


def test_a_log_whose_keys_do_not_fit_the_map_is_cleaned_in_several_passes(tmp_path, clock):
    # LogCleanerTest#testPartialSegmentClean
    log = make_log(tmp_path, clock, segment_bytes=4096)
    oracle = Oracle()
    fill(log, oracle, keys=200, rounds=3, clock=clock)
    commit(log)
    lc = cleaner(tmp_path, clock, dedupe_buffer_bytes=1024)  # 61 slots, 54 keys a pass
    assert lc.allocate_offset_map().max_entries == 54
    ends = []
    while True:
        stats = lc.clean_log(TP, log)
        assert stats is not None
        assert stats.map_entries <= 54
        assert lc.offset_map is not None and lc.offset_map.memory_bytes <= 1024
        oracle.check(log)  # every pass leaves a correct log
        if stats.end_offset == log.log_end_offset:
            break
        ends.append(stats.end_offset)
        assert lc.checkpoints()[TP] == stats.end_offset
    assert len(ends) >= 10 and ends == sorted(ends)
    records = read_log(log)
    assert len(records) == 200  # each key once: the last pass saw them all as clean


def test_small_segments_are_merged_within_segment_bytes(tmp_path, clock):
    log = make_log(tmp_path, clock, segment_bytes=600)
    oracle = Oracle()
    fill(log, oracle, keys=6, rounds=10, clock=clock)
    commit(log)
    before = len(log.segments())
    lc = cleaner(tmp_path, clock)
    lc.clean_log(TP, log)
    # Groups are formed from the sizes before cleaning; the next pass merges what shrank.
    fill(log, oracle, keys=1, rounds=1, clock=clock)
    commit(log)
    lc.clean_log(TP, log)
    segments = log.segments()
    assert len(segments) < before / 2
    assert all(s.size <= 600 for s in segments)
    for s in segments:
        s.offset_index.sanity_check()
        s.time_index.sanity_check()
    oracle.check(log)


def test_cleaned_segments_keep_the_last_modified_time_of_what_they_replace(tmp_path, clock):
    log = make_log(tmp_path, clock)
    oracle = Oracle()
    fill(log, oracle, keys=2, rounds=3, clock=clock)
    log.roll()
    log.segments()[0].log.set_last_modified_ms(1_000_000_000_000)
    log.update_high_watermark(log.log_end_offset)
    cleaner(tmp_path, clock).clean_log(TP, log)
    assert log.segments()[0].log.last_modified_ms() == 1_000_000_000_000


@pytest.mark.parametrize("codec", ["gzip", "lz4", "zstd", "snappy"])
def test_compressed_logs_are_cleaned_and_stay_compressed(tmp_path, clock, codec):
    log = make_log(tmp_path, clock, segment_bytes=4096)
    oracle = Oracle()
    for r in range(6):
        append(
            log,
            oracle,
            [(f"k{k}".encode(), f"v{r}".encode() * 10) for k in range(8)],
            clock.wall_ms(),
            codec,
        )
    commit(log)
    cleaner(tmp_path, clock).clean_log(TP, log)
    oracle.check(log)
    for segment in log.segments()[:-1]:
        for batch in read_batches(segment.log.read(0, segment.size)):
            assert batch.compression.label == codec


def test_the_checkpoint_file_records_where_the_next_pass_starts(tmp_path, clock):
    log = make_log(tmp_path, clock)
    fill(log, Oracle(), keys=5, rounds=4, clock=clock)
    commit(log)
    lc = cleaner(tmp_path, clock)
    stats = lc.clean_log(TP, log)
    assert stats is not None
    on_disk = OffsetCheckpointFile(tmp_path / CLEANER_OFFSET_CHECKPOINT).read()
    assert on_disk == {TP: log.log_end_offset}
    # a new cleaner starts from the file: nothing left to clean
    again = cleaner(tmp_path, clock).clean_log(TP, log)
    assert again is not None and again.groups == 0 and again.end_offset == log.log_end_offset


def test_an_unreadable_checkpoint_means_cleaning_from_the_start(tmp_path, clock):
    (tmp_path / CLEANER_OFFSET_CHECKPOINT).write_text("garbage\n")
    assert cleaner(tmp_path, clock).checkpoints() == {}


def test_records_without_a_key_are_rejected_by_compacted_logs(tmp_path, clock):
    # UnifiedLogTest#testCompactedTopicConstraints: INVALID_RECORD (87), nothing written
    for policy in ("compact", "compact,delete"):
        log = Log.open(
            tmp_path / f"{policy.replace(',', '_')}-0", LogConfig(cleanup_policy=policy), clock
        )
        with pytest.raises(InvalidRecordError) as e:
            log.append_as_leader(keyed_batch([(b"k", b"v"), (None, b"v")]), leader_epoch=0)
        assert e.value.code == 87
        assert log.log_end_offset == 0 and log.size == 0
    plain = Log.open(tmp_path / "plain-0", LogConfig(), clock)
    plain.append_as_leader(keyed_batch([(None, b"v")]), leader_epoch=0)


def test_a_segment_with_a_corrupt_batch_makes_the_log_uncleanable(tmp_path, clock):
    log = make_log(tmp_path, clock)
    fill(log, Oracle(), keys=5, rounds=4, clock=clock)
    commit(log)
    victim = log.segments()[0].log.path
    with open(victim, "r+b") as f:
        f.seek(70)
        byte = f.read(1)
        f.seek(70)
        f.write(bytes([byte[0] ^ 0x01]))
    before = sorted(p.name for p in log.dir.iterdir())
    lc = cleaner(tmp_path, clock)
    assert lc.clean_log(TP, log) is None
    assert lc.uncleanable_partitions == {TP}
    assert sorted(p.name for p in log.dir.iterdir()) == before  # no .cleaned left behind
    assert lc.clean_filthiest_log({TP: log}) is None  # skipped from now on


# -- a log changing while it is cleaned --


def interleave(monkeypatch, at_call: int, action) -> None:
    """Run ``action`` when the cleaner filters its ``at_call``-th batch (the cleaner holds no
    lock then, as a concurrent caller would find it)."""
    import storage.log_cleaner as module

    real = module.filter_batch  # type: ignore[attr-defined]
    calls = [0]

    def wrapped(*args, **kwargs):
        calls[0] += 1
        if calls[0] == at_call:
            action()
        return real(*args, **kwargs)

    monkeypatch.setattr(module, "filter_batch", wrapped)


def test_reads_appends_rolls_and_retention_proceed_during_a_pass(tmp_path, clock, monkeypatch):
    log = make_log(tmp_path, clock)
    oracle = Oracle()
    fill(log, oracle, keys=5, rounds=6, clock=clock)
    commit(log)
    seen: dict[str, object] = {}

    def meanwhile() -> None:
        seen["before"] = live(read_log(log))
        fill(log, oracle, keys=7, rounds=2, clock=clock)
        log.roll()
        log.update_high_watermark(log.log_end_offset)
        seen["deleted"] = log.delete_old_segments()  # compact only: log-start breaches only
        seen["during"] = live(read_log(log))

    interleave(monkeypatch, 3, meanwhile)
    stats = cleaner(tmp_path, clock).clean_log(TP, log)
    assert stats is not None and stats.groups > 0
    assert seen["deleted"] == 0
    assert seen["during"] == oracle.table()
    oracle.check(log)
    assert stats.end_offset < log.log_end_offset  # what came during the pass is still dirty


def test_truncation_during_a_pass_aborts_it_and_lowers_the_checkpoint(tmp_path, clock, monkeypatch):
    log = make_log(tmp_path, clock)
    oracle = Oracle()
    fill(log, oracle, keys=5, rounds=6, clock=clock)
    commit(log)
    lc = cleaner(tmp_path, clock)
    assert lc.clean_log(TP, log) is not None
    end = log.log_end_offset
    fill(log, oracle, keys=5, rounds=6, clock=clock)
    commit(log)
    target = end + 7

    def truncate() -> None:
        log.truncate_to(target)
        log.update_high_watermark(log.log_end_offset)

    interleave(monkeypatch, 2, truncate)
    before = {p.name for p in log.dir.iterdir()}
    assert lc.clean_log(TP, log) is None  # aborted
    assert not [p for p in log.dir.iterdir() if p.name.endswith((".cleaned", ".swap"))]
    assert {p.name for p in log.dir.iterdir()} <= before
    truncated = Oracle()
    for offset, pair in oracle.written.items():
        if offset < log.log_end_offset:
            truncated.append(offset, [pair])
    truncated.check(log)
    # the next pass starts no later than the segment the truncation left active
    monkeypatch.undo()
    active_base = log.active_segment.base_offset
    stats = lc.clean_log(TP, log)
    assert stats is not None and stats.first_dirty_offset <= active_base
    truncated.check(log)


def test_retention_removing_a_segment_being_cleaned_aborts_the_pass(tmp_path, clock, monkeypatch):
    log = make_log(tmp_path, clock, cleanup_policy="compact,delete", retention_ms=1000)
    oracle = Oracle()
    fill(log, oracle, keys=5, rounds=6, clock=clock)
    commit(log)

    def expire() -> None:
        clock.advance(10_000)
        assert log.delete_old_segments() > 0

    interleave(monkeypatch, 2, expire)
    assert cleaner(tmp_path, clock).clean_log(TP, log) is None
    assert not [p for p in log.dir.iterdir() if p.name.endswith((".cleaned", ".swap"))]
    assert log.log_start_offset == log.log_end_offset


def test_closing_the_log_aborts_the_pass(tmp_path, clock, monkeypatch):
    log = make_log(tmp_path, clock)
    fill(log, Oracle(), keys=5, rounds=6, clock=clock)
    commit(log)
    interleave(monkeypatch, 2, log.close)
    assert cleaner(tmp_path, clock).clean_log(TP, log) is None
    assert not [p for p in log.dir.iterdir() if p.name.endswith((".cleaned", ".swap"))]


def test_a_cleaner_thread_and_a_writer_thread_on_one_log(tmp_path, clock):
    log = make_log(tmp_path, clock, segment_bytes=2048)
    oracle = Oracle()
    lc = cleaner(tmp_path, clock, dedupe_buffer_bytes=2048)
    stop = threading.Event()
    errors: list[BaseException] = []
    rewriting_passes = [0]

    def clean_forever() -> None:
        try:
            while not stop.is_set():
                stats = lc.clean_log(TP, log)
                if stats is not None and stats.groups:
                    rewriting_passes[0] += 1
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    thread = threading.Thread(target=clean_forever)
    thread.start()
    real_time = SystemClock()
    deadline = real_time.monotonic_ms() + 60_000  # a condition polled with a deadline
    try:
        r = 0
        while r < 60 or rewriting_passes[0] < 5:
            assert real_time.monotonic_ms() < deadline, f"{rewriting_passes[0]} passes in 60 s"
            fill(log, oracle, keys=9, rounds=1, clock=clock)
            if r % 3 == 0:
                log.roll()
            log.update_high_watermark(log.log_end_offset)
            assert live(read_log(log)) == oracle.table()
            r += 1
    finally:
        stop.set()
        thread.join()
    assert not errors and not lc.uncleanable_partitions
    oracle.check(log)


def test_a_cleaned_log_reopens_the_same(tmp_path, clock):
    log = make_log(tmp_path, clock)
    oracle = Oracle()
    fill(log, oracle, keys=6, rounds=5, clock=clock)
    append(log, oracle, [(b"k2", None)], clock.wall_ms())
    commit(log)
    cleaner(tmp_path, clock).clean_log(TP, log)
    records = read_log(log)
    log.flush()
    log.close()
    for clean in (True, False):
        reopened = Log.open(
            tmp_path / "t-0", log.config, clock, recovery_point=0, had_clean_shutdown=clean
        )
        reopened.update_high_watermark(reopened.log_end_offset)
        assert read_log(reopened) == records
        assert reopened.recovery_bytes_truncated == 0
        for s in reopened.segments():
            assert s.log.path.stat().st_size == s.size
        reopened.close()


def test_merged_segments_with_tiny_indexes_stay_valid(tmp_path, clock):
    log = make_log(
        tmp_path, clock, segment_bytes=4096, segment_index_bytes=48, index_interval_bytes=0
    )
    oracle = Oracle()
    fill(log, oracle, keys=40, rounds=2, clock=clock)
    commit(log)
    before = len(log.segments())
    lc = cleaner(tmp_path, clock)
    for _ in range(2):
        fill(log, oracle, keys=1, rounds=1, clock=clock)
        commit(log)
        assert lc.clean_log(TP, log) is not None
    assert len(log.segments()) < before
    for s in log.segments():
        s.offset_index.sanity_check()
        s.time_index.sanity_check()
        assert s.offset_index.entries <= s.offset_index.max_entries
    for r in oracle.check(log):
        found = log.read(r.offset, 1).records
        assert RecordBatch(bytes(found)).last_offset >= r.offset
