"""Loading and crash recovery (Kafka LogLoaderTest, LogSegmentTest#testRecovery*)."""

from __future__ import annotations

import os
from pathlib import Path

from storage import Log, LogConfig
from tests.storage_helpers import all_records, make_batch, open_log, value_for

CONFIG = LogConfig(segment_bytes=4000, index_interval_bytes=200)


def _abandon(log: Log) -> None:
    """Stop as a killed process would: no flush, no trimming, no final index entries."""
    for segment in log.segments():
        segment.close_handlers()


def _write(tmp_path, clock, batches: int = 60, per_batch: int = 3, config=CONFIG) -> Log:
    log = open_log(tmp_path, clock, config)
    for i in range(batches):
        log.append_as_leader(make_batch(per_batch, first=per_batch * i), leader_epoch=0)
    return log


def _reopen(tmp_path, clock, recovery_point: int = 0, clean: bool = False, config=CONFIG) -> Log:
    return open_log(
        tmp_path, clock, config, recovery_point=recovery_point, had_clean_shutdown=clean
    )


def _segment_files(tmp_path: Path, suffix: str) -> list[Path]:
    return sorted((tmp_path / "topic-0").glob(f"*{suffix}"))


def test_unclean_reopen_rebuilds_untrimmed_indexes(tmp_path, clock):
    log = _write(tmp_path, clock)
    leo = log.log_end_offset
    active_index = log.active_segment.offset_index.path
    _abandon(log)
    assert active_index.stat().st_size == CONFIG.segment_index_bytes  # preallocated, untrimmed
    reopened = _reopen(tmp_path, clock, recovery_point=log.recovery_point)
    assert reopened.log_end_offset == leo
    assert all_records(reopened) == [(i, value_for(i)) for i in range(leo)]
    assert reopened.recovery_bytes_read > 0


def test_recovery_reads_only_from_the_segment_holding_the_recovery_point(tmp_path, clock):
    log = _write(tmp_path, clock, batches=200)
    segments = log.segments()
    assert len(segments) > 4
    recovery_point = log.recovery_point  # the active segment's base, flushed at the last roll
    assert recovery_point == segments[-1].base_offset
    unflushed_bytes = segments[-1].size
    _abandon(log)
    reopened = _reopen(tmp_path, clock, recovery_point=recovery_point)
    assert 0 < reopened.recovery_bytes_read <= unflushed_bytes
    assert reopened.log_end_offset == log.log_end_offset


def test_torn_tail_is_cut_at_the_last_whole_batch(tmp_path, clock):
    batch = len(make_batch(3))
    for cut in (1, 17, 30, batch - 1):
        directory = tmp_path / f"cut{cut}"
        log = _write(directory, clock, batches=5)
        _abandon(log)
        (path,) = _segment_files(directory, ".log")
        with open(path, "r+b") as f:
            f.truncate(path.stat().st_size - cut)
        reopened = _reopen(directory, clock)
        assert reopened.log_end_offset == 12
        assert all_records(reopened) == [(i, value_for(i)) for i in range(12)]
        reopened.close()


def test_garbage_after_the_last_batch_is_removed(tmp_path, clock):
    log = _write(tmp_path, clock, batches=5)
    _abandon(log)
    (path,) = _segment_files(tmp_path, ".log")
    size = path.stat().st_size
    with open(path, "ab") as f:
        f.write(os.urandom(100))
    reopened = _reopen(tmp_path, clock)
    assert reopened.log_end_offset == 15
    assert reopened.recovery_bytes_truncated == 100
    assert path.stat().st_size == size
    assert reopened.append_as_leader(make_batch(1, first=15), 0).first_offset == 15


def test_zero_filled_tail_of_a_preallocated_log_is_removed(tmp_path, clock):
    config = LogConfig(preallocate=True, segment_bytes=8000)
    log = _write(tmp_path, clock, batches=5, config=config)
    _abandon(log)
    (path,) = _segment_files(tmp_path, ".log")
    assert path.stat().st_size == 8000
    reopened = _reopen(tmp_path, clock, config=config)
    assert reopened.log_end_offset == 15
    assert all_records(reopened) == [(i, value_for(i)) for i in range(15)]


def test_flipped_byte_mid_segment_cuts_there_and_deletes_later_segments(tmp_path, clock):
    log = _write(tmp_path, clock, batches=100)
    bases = [s.base_offset for s in log.segments()]
    assert len(bases) >= 3
    _abandon(log)
    first_log = _segment_files(tmp_path, ".log")[0]
    batch = len(make_batch(3))
    with open(first_log, "r+b") as f:
        f.seek(batch * 4 + 40)  # inside the fifth batch (offsets 12..14), past its leader epoch
        byte = f.read(1)
        f.seek(batch * 4 + 40)
        f.write(bytes([byte[0] ^ 0x55]))
    reopened = _reopen(tmp_path, clock, recovery_point=0)
    assert reopened.log_end_offset == 12
    assert [s.base_offset for s in reopened.segments()] == [0]
    assert all_records(reopened) == [(i, value_for(i)) for i in range(12)]
    assert reopened.append_as_leader(make_batch(2, first=12), 1).first_offset == 12


def test_corruption_below_the_recovery_point_is_not_scanned(tmp_path, clock):
    # Kafka trusts flushed data: only segments from the recovery point on are re-validated.
    log = _write(tmp_path, clock, batches=100)
    recovery_point = log.recovery_point
    leo = log.log_end_offset
    _abandon(log)
    first_log = _segment_files(tmp_path, ".log")[0]
    with open(first_log, "r+b") as f:
        f.seek(100)
        f.write(b"\xff")
    reopened = _reopen(tmp_path, clock, recovery_point=recovery_point)
    assert reopened.log_end_offset == leo


def test_missing_index_is_rebuilt_even_after_a_clean_stop(tmp_path, clock):
    log = _write(tmp_path, clock, batches=100)
    leo = log.log_end_offset
    expected_entries = log.segments()[0].offset_index.entries
    log.flush()
    log.close()
    _segment_files(tmp_path, ".index")[0].unlink()
    _segment_files(tmp_path, ".timeindex")[1].unlink()
    reopened = _reopen(tmp_path, clock, recovery_point=leo, clean=True)
    assert reopened.segments()[0].offset_index.entries == expected_entries
    assert reopened.log_end_offset == leo
    assert all_records(reopened) == [(i, value_for(i)) for i in range(leo)]
    found = reopened.fetch_offset_by_timestamp(1_001)
    assert found is not None and found.offset == 1


def test_index_with_a_bad_length_is_rebuilt(tmp_path, clock):
    log = _write(tmp_path, clock, batches=100)
    leo = log.log_end_offset
    log.flush()
    log.close()
    index = _segment_files(tmp_path, ".index")[0]
    with open(index, "ab") as f:
        f.write(b"\x00\x01\x02")  # no longer a multiple of 8
    reopened = _reopen(tmp_path, clock, recovery_point=leo, clean=True)
    assert reopened.segments()[0].offset_index.file_length() % 8 == 0
    assert all_records(reopened) == [(i, value_for(i)) for i in range(leo)]


def test_orphan_and_temporary_files_are_removed(tmp_path, clock):
    log = _write(tmp_path, clock, batches=5)
    log.flush()
    log.close()
    d = tmp_path / "topic-0"
    (d / f"{99:020d}.index").write_bytes(b"\x00" * 16)
    (d / f"{99:020d}.timeindex").write_bytes(b"\x00" * 24)
    (d / f"{0:020d}.log.deleted").write_bytes(b"old")
    (d / f"{50:020d}.log.cleaned").write_bytes(b"half-written")
    (d / f"{60:020d}.log.swap").write_bytes(b"")  # above a .cleaned file: unfinished
    reopened = _reopen(tmp_path, clock, recovery_point=15, clean=True)
    names = sorted(p.name for p in d.iterdir())
    assert names == [
        f"{0:020d}.index",
        f"{0:020d}.log",
        f"{0:020d}.timeindex",
        f"{15:020d}.snapshot",  # the producer state, taken at close (as Kafka does)
        "leader-epoch-checkpoint",
    ]
    assert reopened.log_end_offset == 15


def test_completed_swap_replaces_the_segments_it_covers(tmp_path, clock):
    # Two segments [0..14], [15..29] compacted into one .swap holding offsets 0..29's survivors.
    log = _write(
        tmp_path, clock, batches=10, config=LogConfig(segment_bytes=len(make_batch(3)) * 5)
    )
    assert [s.base_offset for s in log.segments()] == [0, 15]
    log.roll()
    log.flush()
    log.close()
    d = tmp_path / "topic-0"
    survivors = make_batch(1, first=14, base_offset=14) + make_batch(1, first=29, base_offset=29)
    (d / f"{0:020d}.log.swap").write_bytes(survivors)
    reopened = _reopen(tmp_path, clock, recovery_point=30, clean=True)
    assert [s.base_offset for s in reopened.segments()] == [0, 30]
    assert [o for o, _ in all_records(reopened)] == [14, 29]
    assert not list(d.glob("*.swap"))


def test_log_end_below_checkpointed_log_start_starts_afresh(tmp_path, clock):
    log = _write(tmp_path, clock, batches=5)
    log.flush()
    log.close()
    reopened = open_log(
        tmp_path, clock, CONFIG, recovery_point=15, had_clean_shutdown=True, log_start_offset=100
    )
    assert (reopened.log_start_offset, reopened.log_end_offset) == (100, 100)
    assert [s.base_offset for s in reopened.segments()] == [100]


def test_recovery_point_stays_until_the_next_flush(tmp_path, clock):
    # Kafka testLogRecoversToCorrectOffset: reopen with recovery point 10 → still 10
    log = _write(tmp_path, clock, batches=10, config=LogConfig())
    _abandon(log)
    reopened = _reopen(tmp_path, clock, recovery_point=9, config=LogConfig())
    assert reopened.recovery_point == 9
    reopened.flush()
    assert reopened.recovery_point == 30
