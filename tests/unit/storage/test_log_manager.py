"""LogManager: directory locks, checkpoints, clean-shutdown marker, periodic tasks."""

from __future__ import annotations

import json
import os

import pytest

from odradek.errors import InvalidConfigError, InvalidTopicError
from storage import LogConfig, LogManager, LogManagerConfig
from storage.checkpoint_file import OffsetCheckpointFile
from storage.errors import LogDirLockedError
from storage.log_manager import (
    CLEAN_SHUTDOWN_FILE,
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
)
from tests.storage_helpers import all_records, make_batch, value_for


def _manager(dirs, clock, config=None, manager_config=None):
    return LogManager(dirs, config or LogConfig(), clock, manager_config)


def test_a_directory_is_locked_while_owned(tmp_path, clock):
    manager = _manager([tmp_path / "a"], clock)
    with pytest.raises(LogDirLockedError):
        _manager([tmp_path / "a"], clock)
    manager.shutdown()
    _manager([tmp_path / "a"], clock).shutdown()


def test_logs_spread_over_directories_and_survive_a_clean_restart(tmp_path, clock):
    dirs = [tmp_path / "a", tmp_path / "b"]
    manager = _manager(dirs, clock)
    for p in range(4):
        log = manager.get_or_create_log("orders", p)
        log.append_as_leader(make_batch(3, first=0), leader_epoch=0)
        log.update_high_watermark(2)
    assert {log.dir.parent for log in manager.all_logs().values()} == set(dirs)
    manager.shutdown()
    for d in dirs:
        marker = json.loads((d / CLEAN_SHUTDOWN_FILE).read_text())
        assert marker["version"] == 0
        points = OffsetCheckpointFile(d / RECOVERY_POINT_CHECKPOINT).read()
        assert set(points.values()) == {3} and len(points) == 2
        hws = OffsetCheckpointFile(d / REPLICATION_OFFSET_CHECKPOINT).read()
        assert set(hws.values()) == {2}

    restarted = _manager(dirs, clock)
    assert all(restarted.had_clean_shutdown.values())
    assert not any((d / CLEAN_SHUTDOWN_FILE).exists() for d in dirs)  # deleted at startup
    for p in range(4):
        log = restarted.get_log("orders", p)
        assert log is not None and log.recovery_bytes_read == 0
        assert (log.log_end_offset, log.high_watermark, log.recovery_point) == (3, 2, 3)
        assert all_records(log) == [(i, value_for(i)) for i in range(3)]
    restarted.shutdown()


def test_unclean_restart_recovers_from_the_checkpointed_recovery_point(tmp_path, clock):
    manager = _manager([tmp_path], clock, LogConfig(segment_bytes=2000))
    log = manager.get_or_create_log("t", 0)
    for i in range(50):
        log.append_as_leader(make_batch(2, first=2 * i), leader_epoch=0)
    manager.checkpoint_recovery_points()
    recovery_point = log.recovery_point
    assert recovery_point > 0
    # a crash: no shutdown; the lock dies with the process, as flock does
    for segment in log.segments():
        segment.close_handlers()
    manager._release_locks()
    restarted = _manager([tmp_path], clock, LogConfig(segment_bytes=2000))
    assert restarted.had_clean_shutdown == {tmp_path.resolve(): False}
    relog = restarted.get_log("t", 0)
    assert relog is not None
    assert relog.log_end_offset == 100
    assert relog.recovery_point == recovery_point
    assert 0 < relog.recovery_bytes_read <= relog.active_segment.size
    restarted.shutdown()


def test_unreadable_checkpoint_means_full_recovery_not_failure(tmp_path, clock):
    manager = _manager([tmp_path], clock)
    log = manager.get_or_create_log("t", 0)
    log.append_as_leader(make_batch(5), leader_epoch=0)
    manager.shutdown()
    (tmp_path / RECOVERY_POINT_CHECKPOINT).write_text("7\nnot a checkpoint\n")
    (tmp_path / CLEAN_SHUTDOWN_FILE).unlink()
    restarted = _manager([tmp_path], clock)
    relog = restarted.get_log("t", 0)
    assert relog is not None and relog.log_end_offset == 5 and relog.recovery_point == 0
    restarted.shutdown()


def test_tick_runs_flush_retention_and_checkpoints_on_the_clock(tmp_path, clock):
    mc = LogManagerConfig(
        retention_check_interval_ms=1000,
        flush_scheduler_interval_ms=100,
        flush_offset_checkpoint_interval_ms=500,
        flush_start_offset_checkpoint_interval_ms=500,
        high_watermark_checkpoint_interval_ms=500,
        initial_task_delay_ms=2000,
    )
    config = LogConfig(flush_ms=300, retention_ms=10_000, file_delete_delay_ms=1000)
    manager = _manager([tmp_path], clock, config, mc)
    log = manager.get_or_create_log("t", 0)
    log.append_as_leader(make_batch(3, timestamp=clock.wall_ms()), leader_epoch=0)
    log.roll()
    log.append_as_leader(make_batch(3, timestamp=clock.wall_ms() + 20_000), leader_epoch=0)
    log.update_high_watermark(6)
    manager.tick()
    assert not (tmp_path / RECOVERY_POINT_CHECKPOINT).exists()
    clock.advance(500)
    manager.tick()  # flush (300 ms passed) and the checkpoints are due
    assert log.recovery_point == 6
    assert OffsetCheckpointFile(tmp_path / RECOVERY_POINT_CHECKPOINT).read() == {("t", 0): 6}
    assert OffsetCheckpointFile(tmp_path / REPLICATION_OFFSET_CHECKPOINT).read() == {("t", 0): 6}
    clock.advance(10_000)  # past the initial delay: retention removes the old segment
    manager.tick()
    assert log.log_start_offset == 3
    assert list(log.dir.glob("*.deleted"))
    clock.advance(1000)
    manager.tick()
    assert not list(log.dir.glob("*.deleted"))
    assert OffsetCheckpointFile(tmp_path / LOG_START_OFFSET_CHECKPOINT).read() == {}
    log.delete_records(4)
    clock.advance(500)
    manager.tick()
    assert OffsetCheckpointFile(tmp_path / LOG_START_OFFSET_CHECKPOINT).read() == {("t", 0): 4}
    manager.shutdown()
    restarted = _manager([tmp_path], clock, config, mc)
    relog = restarted.get_log("t", 0)
    assert relog is not None and relog.log_start_offset == 4
    restarted.shutdown()


def test_topic_names_and_deletion(tmp_path, clock):
    manager = _manager([tmp_path], clock)
    for bad in ("", ".", "..", "a/b", "x" * 250, "spaces are bad"):
        with pytest.raises(InvalidTopicError):
            manager.get_or_create_log(bad, 0)
    log = manager.get_or_create_log("gone", 0)
    log.append_as_leader(make_batch(1), 0)
    held = log.read(0, 1 << 20, as_slice=True).slice  # a reader about to sendfile it
    assert held is not None
    stored = bytes(log.read(0, 1 << 20).records)
    assert manager.delete_log("gone", 0)
    assert not manager.delete_log("gone", 0)
    # renamed at once, so the name can be reused; its files stay open for file.delete.delay.ms
    [renamed] = tmp_path.glob("gone-0*")
    assert renamed.name.endswith("-delete")
    with pytest.raises(ValueError):
        log.read(0, 1 << 20)  # no longer served
    other = os.open(tmp_path / "other-file", os.O_RDWR | os.O_CREAT)  # may reuse a number
    os.write(other, b"not the log's bytes " * 20)
    assert held.read() == stored
    clock.advance(LogConfig().file_delete_delay_ms)
    manager.tick()
    assert not list(tmp_path.glob("gone-0*"))
    os.close(other)
    manager.shutdown()


def test_leftover_deleted_directories_are_removed_at_startup(tmp_path, clock):
    (tmp_path / "old-0.0123abcd-delete").mkdir()
    (tmp_path / "old-0.0123abcd-delete" / "x.log").write_bytes(b"x")
    manager = _manager([tmp_path], clock)
    assert not (tmp_path / "old-0.0123abcd-delete").exists()
    assert manager.all_logs() == {}
    manager.shutdown()


def test_config_validation_and_kafka_names():
    with pytest.raises(InvalidConfigError, match="segment_bytes"):
        LogConfig(segment_bytes=13)
    with pytest.raises(InvalidConfigError, match="cleanup_policy"):
        LogConfig(cleanup_policy="shred")
    config = LogConfig.from_kafka({"segment.bytes": "1048576", "cleanup.policy": "delete,compact"})
    assert config.segment_bytes == 1048576 and config.cleanup_policy == "compact,delete"
    assert LogConfig.from_kafka(config.to_kafka()) == config
    with pytest.raises(InvalidConfigError, match="unknown topic config"):
        LogConfig.from_kafka({"segment.size": "1"})
    with pytest.raises(InvalidConfigError, match=r"retention\.ms"):
        LogConfig.from_kafka({"retention.ms": "soon"})


@pytest.mark.parametrize(
    ("props", "message"),
    [
        (
            {"segment.bytes": "13"},
            "invalid value '13' for topic config 'segment.bytes': must be at least 14",
        ),
        ({"min.insync.replicas": "0"}, "'min.insync.replicas': must be at least 1"),
        ({"cleanup.policy": "shred"}, "'cleanup.policy': must be one of delete, compact"),
        ({"message.timestamp.type": "Now"}, "must be CreateTime or LogAppendTime"),
        ({"min.cleanable.dirty.ratio": "2"}, "'min.cleanable.dirty.ratio': must be 0 to 1"),
    ],
)
def test_kafka_configs_out_of_range_are_named_as_written(props, message):
    """A value out of range names the config as the user wrote it, not the field."""
    with pytest.raises(InvalidConfigError) as raised:
        LogConfig.from_kafka(props)
    assert message in raised.value.message
    assert "_" not in raised.value.message.split(":")[0]


def test_message_timestamp_type_takes_kafkas_spelling():
    config = LogConfig.from_kafka({"message.timestamp.type": "LogAppendTime"})
    assert config.message_timestamp_type == "log_append_time"
    assert config.to_kafka()["message.timestamp.type"] == "LogAppendTime"
    assert LogConfig().to_kafka()["message.timestamp.type"] == "CreateTime"
    assert LogConfig.from_kafka({"message.timestamp.type": "log_append_time"}) == config
    # built from Python, the error names the field
    with pytest.raises(InvalidConfigError, match="message_timestamp_type must be create_time"):
        LogConfig(message_timestamp_type="LogAppendTime")


def test_new_logs_go_to_the_least_loaded_directory_after_loads_and_deletes(tmp_path, clock):
    dirs = [(tmp_path / "a").resolve(), (tmp_path / "b").resolve()]
    manager = _manager(dirs[:1], clock)
    for p in range(3):
        manager.get_or_create_log("old", p)  # all three in a
    manager.shutdown()
    manager = _manager(dirs, clock)  # loaded: a holds 3, b none
    placed = [manager.get_or_create_log("new", p).dir.parent for p in range(4)]
    assert placed == [dirs[1], dirs[1], dirs[1], dirs[0]]  # b until it holds as many
    assert manager.delete_log("old", 0) and manager.delete_log("old", 1)
    assert manager.get_or_create_log("new", 9).dir.parent == dirs[0]  # a: 2, b: 3
    manager.shutdown()
