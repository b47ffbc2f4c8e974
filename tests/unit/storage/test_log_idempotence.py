"""The log's idempotent-producer path: validation on the leader, duplicates answered with the
original offsets, follower state, snapshots at roll/close, recovery, truncation, retention."""

from __future__ import annotations

from pathlib import Path

import pytest

from odradek.clock import ManualClock
from odradek.errors import InvalidProducerEpochError, OutOfOrderSequenceError
from odradek.records import Record, build_batch, read_batches
from storage import Log, LogConfig
from storage.producer_state import read_snapshot, snapshot_file
from tests.storage_helpers import make_batch, open_log

TS = 1_700_000_000_000


def pbatch(pid: int, epoch: int, seq: int, count: int = 1, ts: int = TS, tag: str = "") -> bytes:
    records = [
        Record(key=b"k", value=f"{tag}{pid}-{seq + i}".encode(), timestamp=ts) for i in range(count)
    ]
    return build_batch(records, producer_id=pid, producer_epoch=epoch, base_sequence=seq)


def values(log: Log) -> list[bytes | None]:
    data = log.read(log.log_start_offset, 1 << 30).records
    return [r.value for b in read_batches(data) for r in b.records()]


def test_duplicate_is_answered_with_the_original_offsets(
    tmp_path: Path, clock: ManualClock
) -> None:
    log = open_log(tmp_path, clock)
    log.append_as_leader(make_batch(2), 0)  # not idempotent: offsets 0, 1
    first = log.append_as_leader(pbatch(7, 0, 0, count=3), 0)  # 2..4
    log.append_as_leader(pbatch(7, 0, 3), 0)  # 5
    assert (first.first_offset, first.last_offset, first.duplicate) == (2, 4, False)
    size = log.size
    dup = log.append_as_leader(pbatch(7, 0, 0, count=3), 0)
    assert (dup.first_offset, dup.last_offset, dup.duplicate) == (2, 4, True)
    assert log.log_end_offset == 6 and log.size == size
    # non-idempotent batches bypass the checks: the same bytes twice are stored twice
    log.append_as_leader(make_batch(1), 0)
    log.append_as_leader(make_batch(1), 0)
    assert log.log_end_offset == 8


def test_out_of_order_and_stale_epoch_write_nothing(tmp_path: Path, clock: ManualClock) -> None:
    log = open_log(tmp_path, clock)
    log.append_as_leader(pbatch(7, 1, 0), 0)
    with pytest.raises(OutOfOrderSequenceError):
        log.append_as_leader(pbatch(7, 1, 2), 0)
    with pytest.raises(InvalidProducerEpochError):
        log.append_as_leader(pbatch(7, 0, 1), 0)
    with pytest.raises(OutOfOrderSequenceError):
        log.append_as_leader(pbatch(7, 2, 5), 0)  # a new epoch starts at 0
    # one bad batch in an append refuses the whole append
    with pytest.raises(OutOfOrderSequenceError):
        log.append_as_leader(pbatch(8, 0, 0) + pbatch(7, 1, 3), 0)
    assert log.log_end_offset == 1 and 8 not in log.producer_state()
    assert log.leader_epoch_entries() == [(0, 0)]


def test_follower_builds_state_without_checks(tmp_path: Path, clock: ManualClock) -> None:
    leader = open_log(tmp_path, clock, name="l-0")
    follower = open_log(tmp_path, clock, name="f-0")
    leader.append_as_leader(pbatch(7, 0, 0, count=2), 3)
    leader.append_as_leader(pbatch(7, 0, 2), 3)
    follower.append_as_follower(leader.read(0, 1 << 20).records)
    entry = follower.producer_state()[7]
    assert (entry.producer_epoch, entry.last_seq, entry.last_data_offset) == (0, 2, 2)
    # the follower, once leader, recognises the retry
    dup = follower.append_as_leader(pbatch(7, 0, 2), 4)
    assert dup.duplicate and dup.first_offset == 2


def test_snapshots_at_roll_and_close_and_reload(tmp_path: Path, clock: ManualClock) -> None:
    log = open_log(tmp_path, clock)
    log.append_as_leader(pbatch(7, 0, 0, count=2), 0)
    log.roll()
    assert log.producer_snapshot_offsets() == [2]
    log.append_as_leader(pbatch(7, 0, 2), 0)
    log.append_as_leader(pbatch(9, 0, 0), 0)
    log.flush()
    log.close()
    assert sorted(p.name for p in log.dir.glob("*.snapshot")) == [
        "00000000000000000002.snapshot",
        "00000000000000000004.snapshot",
    ]
    assert {e.producer_id for e in read_snapshot(snapshot_file(log.dir, 4))} == {7, 9}
    reopened = open_log(tmp_path, clock, recovery_point=4, had_clean_shutdown=True)
    assert reopened.append_as_leader(pbatch(7, 0, 2), 0).first_offset == 2  # the last batch
    with pytest.raises(OutOfOrderSequenceError):
        reopened.append_as_leader(pbatch(7, 0, 5), 0)
    assert reopened.append_as_leader(pbatch(7, 0, 3), 0).first_offset == 4


def test_unclean_reopen_replays_after_the_snapshot(tmp_path: Path, clock: ManualClock) -> None:
    log = open_log(tmp_path, clock)
    log.append_as_leader(pbatch(7, 0, 0), 0)
    log.roll()  # snapshot at 1, recovery point 1
    for seq in range(1, 4):
        log.append_as_leader(pbatch(7, 0, seq), 0)
    # "crash": no close, no snapshot at 4
    reopened = open_log(tmp_path, clock, recovery_point=log.recovery_point)
    assert reopened.producer_state()[7].last_seq == 3
    for seq in range(1, 4):  # each of the replayed batches is still recognised
        assert reopened.append_as_leader(pbatch(7, 0, seq), 0).first_offset == seq
    assert reopened.log_end_offset == 4


def test_snapshot_above_the_recovery_point_is_not_trusted(
    tmp_path: Path, clock: ManualClock
) -> None:
    log = open_log(tmp_path, clock)
    log.append_as_leader(pbatch(7, 0, 0), 0)
    log.append_as_leader(pbatch(7, 0, 1), 0)
    log.close()  # snapshot at 2, but no flush: the recovery point stays 0
    reopened = open_log(tmp_path, clock, recovery_point=0)
    assert reopened.producer_snapshot_offsets() == [2]  # rewritten from the replay
    assert reopened.producer_state()[7].last_seq == 1


def test_truncation_drops_snapshots_above_and_rebuilds(tmp_path: Path, clock: ManualClock) -> None:
    log = open_log(tmp_path, clock)
    log.append_as_leader(pbatch(7, 0, 0), 0)
    log.roll()
    log.append_as_leader(pbatch(7, 0, 1), 0)
    log.append_as_leader(pbatch(8, 0, 0), 0)
    log.roll()
    log.append_as_leader(pbatch(7, 0, 2), 0)
    assert log.producer_snapshot_offsets() == [1, 3]
    log.truncate_to(2)
    assert log.producer_snapshot_offsets() == [1]
    state = log.producer_state()
    assert state[7].last_seq == 1 and 8 not in state
    # the truncated batch may be sent again (as by a new leader's client)
    assert not log.append_as_leader(pbatch(8, 0, 0), 0).duplicate
    log.truncate_fully_and_start_at(10)
    assert log.producer_snapshot_offsets() == [] and log.producer_state() == {}


def test_log_start_drops_snapshots_and_producers_below(tmp_path: Path, clock: ManualClock) -> None:
    log = open_log(tmp_path, clock, LogConfig(file_delete_delay_ms=0))
    log.append_as_leader(pbatch(7, 0, 0), 0)
    log.roll()
    log.append_as_leader(pbatch(8, 0, 0), 0)
    log.roll()
    log.append_as_leader(pbatch(8, 0, 1), 0)
    log.update_high_watermark(3)
    assert log.producer_snapshot_offsets() == [1, 2]
    log.delete_records(2)
    assert log.producer_snapshot_offsets() == [2]
    assert set(log.producer_state()) == {8}
    # producer 7's state is gone: any sequence is accepted again
    assert not log.append_as_leader(pbatch(7, 0, 40), 0).duplicate
    log.close()
    reopened = open_log(tmp_path, clock, log_start_offset=2, recovery_point=0)
    assert set(reopened.producer_state()) == {7, 8}


def test_retention_deletes_snapshots_with_segments(tmp_path: Path, clock: ManualClock) -> None:
    log = open_log(tmp_path, clock, LogConfig(file_delete_delay_ms=0, retention_bytes=1))
    log.append_as_leader(pbatch(7, 0, 0), 0)
    log.roll()
    log.append_as_leader(pbatch(8, 0, 0), 0)
    log.roll()
    log.update_high_watermark(2)
    assert log.delete_old_segments() == 1  # size retention keeps the last non-empty segment
    assert log.log_start_offset == 1
    assert log.producer_snapshot_offsets() == [1, 2]
    assert set(log.producer_state()) == {8}


def test_producers_expire(tmp_path: Path, clock: ManualClock) -> None:
    config = LogConfig(producer_id_expiration_ms=1000)
    log = open_log(tmp_path, clock, config)
    now = clock.wall_ms()
    log.append_as_leader(pbatch(7, 0, 0, ts=now), 0)
    log.append_as_leader(pbatch(8, 0, 0, ts=now + 500), 0)
    clock.advance(999)
    assert log.remove_expired_producers() == []
    clock.advance(1)
    assert log.remove_expired_producers() == [7]
    assert set(log.producer_state()) == {8}
    assert log.active_producer_last_offsets() == {8: 1}


def test_producer_id_expiration_is_a_config() -> None:
    assert LogConfig().producer_id_expiration_ms == 86_400_000
    config = LogConfig.from_kafka({"producer.id.expiration.ms": "5000"})
    assert config.producer_id_expiration_ms == 5000
    with pytest.raises(Exception, match="producer"):
        LogConfig(producer_id_expiration_ms=0)


def test_log_manager_expires_producers_periodically(tmp_path: Path, clock: ManualClock) -> None:
    from storage import LogManager, LogManagerConfig

    manager = LogManager(
        [tmp_path / "data"],
        LogConfig(producer_id_expiration_ms=1000),
        clock,
        LogManagerConfig(producer_id_expiration_check_interval_ms=500),
    )
    try:
        log = manager.get_or_create_log("t", 0)
        log.append_as_leader(pbatch(7, 0, 0, ts=clock.wall_ms()), 0)
        clock.advance(1000)
        manager.tick()
        assert log.producer_state() == {}
    finally:
        manager.shutdown()


def test_compaction_keeps_each_active_producers_last_batch(
    tmp_path: Path, clock: ManualClock
) -> None:
    from storage.config import CleanerConfig
    from storage.log_cleaner import LogCleaner

    config = LogConfig(cleanup_policy="compact", segment_bytes=1024, file_delete_delay_ms=0)
    log = Log.open(tmp_path / "t-0", config, clock)
    now = clock.wall_ms()
    log.append_as_leader(pbatch(7, 0, 0, ts=now), 0)  # offset 0, key k
    log.append_as_leader(pbatch(7, 0, 1, ts=now), 0)  # offset 1, key k: producer 7's last
    log.append_as_leader(pbatch(8, 0, 0, ts=now), 0)  # offset 2, key k: wins, producer 8's last
    for i in range(3):  # non-idempotent overwrites of other keys
        log.append_as_leader(make_batch(1, first=i), 0)
    log.roll()
    log.update_high_watermark(log.log_end_offset)
    lc = LogCleaner([tmp_path], CleanerConfig(dedupe_buffer_bytes=1 << 16), clock)
    assert lc.clean_log(("t", 0), log) is not None
    data = log.read(0, 1 << 20).records
    batches = [
        (b.base_offset, b.producer_id, b.base_sequence, b.records_count) for b in read_batches(data)
    ]
    # offset 0 is gone; producer 7's last batch stays as an empty header; 8's keeps its record
    assert (1, 7, 1, 0) in batches and (2, 8, 0, 1) in batches
    assert all(b[0] != 0 for b in batches)
    log.close()
    # a rebuild from the cleaned log (no snapshot) still knows producer 7's last sequence
    for p in (tmp_path / "t-0").glob("*.snapshot"):
        p.unlink()
    reopened = Log.open(tmp_path / "t-0", config, clock)
    assert reopened.producer_state()[7].last_seq == 1
    assert reopened.append_as_leader(pbatch(7, 0, 1, ts=now), 0).duplicate


def test_a_new_expiration_config_applies_at_once(tmp_path: Path, clock: ManualClock) -> None:
    log = open_log(tmp_path, clock)
    log.append_as_leader(pbatch(7, 0, 0, ts=clock.wall_ms()), 0)
    clock.advance(10_000)
    assert log.remove_expired_producers() == []
    log.update_config(LogConfig(producer_id_expiration_ms=5_000))
    assert log.active_producer_last_offsets() == {}
    assert log.remove_expired_producers() == [7]


def test_clean_open_without_snapshots_skips_the_scan(tmp_path: Path, clock: ManualClock) -> None:
    # Kafka's upgrade shortcut: a log closed cleanly by a version without producer state
    log = open_log(tmp_path, clock)
    log.append_as_leader(pbatch(7, 0, 0), 0)
    log.flush()
    log.close()
    for p in log.dir.glob("*.snapshot"):
        p.unlink()
    clean = open_log(tmp_path, clock, recovery_point=1, had_clean_shutdown=True)
    assert clean.producer_state() == {} and clean.producer_snapshot_offsets() == [1]
    clean.close()
    for p in log.dir.glob("*.snapshot"):
        p.unlink()
    unclean = open_log(tmp_path, clock, recovery_point=1)
    assert set(unclean.producer_state()) == {7}


def test_compaction_drops_the_snapshots_of_replaced_segments(
    tmp_path: Path, clock: ManualClock
) -> None:
    from storage.config import CleanerConfig
    from storage.log_cleaner import LogCleaner

    config = LogConfig(cleanup_policy="compact", file_delete_delay_ms=0)
    log = Log.open(tmp_path / "t-0", config, clock)
    for seq in range(4):  # four one-batch segments, every record under the same key
        log.append_as_leader(pbatch(7, 0, seq, ts=clock.wall_ms()), 0)
        log.roll()
    log.update_high_watermark(log.log_end_offset)
    assert log.producer_snapshot_offsets() == [1, 2, 3, 4]
    lc = LogCleaner([tmp_path], CleanerConfig(dedupe_buffer_bytes=1 << 16), clock)
    stats = lc.clean_log(("t", 0), log)
    assert stats is not None and stats.groups == 1
    # segments 0..3 became one segment at 0: their roll snapshots at 1, 2, 3 went with them
    assert [s.base_offset for s in log.segments()] == [0, 4]
    assert log.producer_snapshot_offsets() == [4]
    assert sorted(p.name for p in log.dir.glob("*.snapshot")) == [f"{4:020d}.snapshot"]


def test_stray_snapshots_are_removed_at_open(tmp_path: Path, clock: ManualClock) -> None:
    log = open_log(tmp_path, clock)
    log.append_as_leader(pbatch(7, 0, 0), 0)
    log.flush()
    log.close()  # snapshot at 1: no segment there
    log = open_log(tmp_path, clock, recovery_point=1, had_clean_shutdown=True)
    log.append_as_leader(pbatch(7, 0, 1), 0)
    log.flush()
    log.close()  # snapshot at 2
    assert log.producer_snapshot_offsets() == [1, 2]
    reopened = open_log(tmp_path, clock, recovery_point=2, had_clean_shutdown=True)
    assert reopened.producer_snapshot_offsets() == [2]  # the latest stays
    assert reopened.append_as_leader(pbatch(7, 0, 1), 0).duplicate


def test_a_producer_batch_without_a_sequence_is_an_invalid_record(
    tmp_path: Path, clock: ManualClock
) -> None:
    # Kafka's LogValidator: hasProducerId() && baseSequence() < 0
    import struct

    import crc32c

    from odradek.errors import InvalidRecordError
    from odradek.records import BASE_SEQUENCE_OFFSET, CRC_OFFSET

    data = bytearray(pbatch(7, 0, 0))
    struct.pack_into(">i", data, BASE_SEQUENCE_OFFSET, -1)
    struct.pack_into(">I", data, CRC_OFFSET, crc32c.crc32c(bytes(data[CRC_OFFSET + 4 :])))
    log = open_log(tmp_path, clock)
    with pytest.raises(InvalidRecordError, match="sequence"):
        log.append_as_leader(bytes(data), 0)
    assert log.log_end_offset == 0
