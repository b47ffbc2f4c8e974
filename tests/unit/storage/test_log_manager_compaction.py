"""The log manager's cleaner: rounds on the clock, checkpoints per directory, retention of
compacted logs after cleaning (Kafka's LogManager and LogCleaner wiring, in our words)."""

from __future__ import annotations

import threading

from storage import LogConfig, LogManager, LogManagerConfig
from storage.checkpoint_file import OffsetCheckpointFile
from storage.config import CleanerConfig
from storage.log_cleaner import CLEANER_OFFSET_CHECKPOINT
from tests.unit.storage.compaction_helpers import Oracle, PassBlocker, keyed_batch, read_log

COMPACT = LogConfig(cleanup_policy="compact", segment_bytes=1024, file_delete_delay_ms=0)
SMALL_MAP = CleanerConfig(dedupe_buffer_bytes=1 << 16, backoff_ms=15_000)
QUIET = LogManagerConfig(initial_task_delay_ms=10**9, retention_check_interval_ms=10**9)


def manager(dirs, clock, cleaner=SMALL_MAP, config=COMPACT) -> LogManager:
    return LogManager(dirs, config, clock, QUIET, cleaner)


def fill(log, oracle: Oracle, keys: int, rounds: int, clock) -> None:
    for r in range(rounds):
        for k in range(keys):
            pairs = [(f"k{k}".encode(), f"v{r}".encode())]
            info = log.append_as_leader(keyed_batch(pairs, clock.wall_ms()), leader_epoch=0)
            oracle.append(info.first_offset, pairs)
    log.roll()
    log.update_high_watermark(log.log_end_offset)


def test_tick_cleans_a_dirty_compacted_log_and_checkpoints_where_it_got(tmp_path, clock):
    m = manager([tmp_path], clock)
    log = m.get_or_create_log("table", 0)
    oracle = Oracle()
    fill(log, oracle, keys=5, rounds=8, clock=clock)
    size = log.size
    m.tick()
    m.wait_for_cleaning()
    assert log.size < size / 3
    oracle.check(log)
    checkpoint = OffsetCheckpointFile(tmp_path.resolve() / CLEANER_OFFSET_CHECKPOINT).read()
    assert checkpoint == {("table", 0): log.log_end_offset}
    m.shutdown()


def test_a_round_that_finds_nothing_waits_the_backoff(tmp_path, clock):
    m = manager([tmp_path], clock)
    log = m.get_or_create_log("table", 0)
    m.tick()  # nothing to clean: the next round is due after backoff_ms
    m.wait_for_cleaning()
    oracle = Oracle()
    fill(log, oracle, keys=5, rounds=8, clock=clock)
    size = log.size
    m.tick()
    m.wait_for_cleaning()
    assert log.size == size
    clock.advance(15_000)
    m.tick()
    m.wait_for_cleaning()
    assert log.size < size
    m.shutdown()


def test_only_logs_above_their_dirty_ratio_are_cleaned(tmp_path, clock):
    m = manager([tmp_path], clock)
    lazy = m.get_or_create_log("lazy", 0, COMPACT.replace(min_cleanable_dirty_ratio=1.0))
    eager = m.get_or_create_log("eager", 0)
    fill(lazy, Oracle(), keys=5, rounds=8, clock=clock)
    fill(eager, Oracle(), keys=5, rounds=8, clock=clock)
    lazy_size = lazy.size
    assert m.clean_logs() is not None
    assert m.clean_logs() is None  # eager is clean now; lazy is never due at ratio 1.0
    assert lazy.size == lazy_size
    assert set(m.cleaner.checkpoints()) == {("eager", 0)}  # type: ignore[union-attr]
    m.shutdown()


def test_retention_of_compacted_logs_runs_with_cleaning_not_with_the_others(tmp_path, clock):
    m = manager([tmp_path], clock)
    retained = COMPACT.replace(cleanup_policy="compact,delete", retention_ms=60_000)
    both = m.get_or_create_log("both", 0, retained)
    plain = m.get_or_create_log("plain", 0, LogConfig(retention_ms=60_000, segment_bytes=1024))
    fill(both, Oracle(), keys=5, rounds=8, clock=clock)
    fill(plain, Oracle(), keys=5, rounds=8, clock=clock)
    clock.advance(120_000)
    assert m.cleanup_logs() > 0
    assert plain.log_start_offset == plain.log_end_offset
    assert both.log_start_offset == 0  # not by cleanup_logs
    m.clean_logs()
    assert both.log_start_offset == both.log_end_offset  # by the cleaning round
    m.shutdown()


def test_compact_only_logs_lose_segments_only_below_the_log_start(tmp_path, clock):
    m = manager([tmp_path], clock)
    log = m.get_or_create_log("table", 0, COMPACT.replace(retention_ms=1))
    oracle = Oracle()
    fill(log, oracle, keys=5, rounds=8, clock=clock)
    clock.advance(60_000)
    m.clean_logs()
    assert log.log_start_offset == 0  # no time retention for policy compact
    log.delete_records(log.segments()[1].base_offset)
    m.clean_logs()
    assert log.segments()[0].base_offset == log.log_start_offset
    m.shutdown()


def test_a_restart_continues_from_the_checkpoint(tmp_path, clock):
    m = manager([tmp_path], clock)
    log = m.get_or_create_log("table", 0)
    oracle = Oracle()
    fill(log, oracle, keys=5, rounds=8, clock=clock)
    first = m.clean_logs()
    assert first is not None
    m.shutdown()
    m = manager([tmp_path], clock)
    again = m.get_log("table", 0)
    assert again is not None
    again.update_high_watermark(again.log_end_offset)
    assert m.cleaner is not None and m.cleaner.checkpoints() == {("table", 0): first.end_offset}
    fill(again, oracle, keys=5, rounds=2, clock=clock)
    second = m.clean_logs()
    assert second is not None and second.first_dirty_offset == first.end_offset
    oracle.check(again)
    m.shutdown()


def test_deleting_a_log_forgets_its_checkpoint(tmp_path, clock):
    m = manager([tmp_path / "a", tmp_path / "b"], clock)
    logs = [m.get_or_create_log("table", p) for p in range(2)]
    for log in logs:
        fill(log, Oracle(), keys=5, rounds=8, clock=clock)
        m.clean_logs()
    assert m.cleaner is not None and set(m.cleaner.checkpoints()) == {("table", 0), ("table", 1)}
    for log in logs:
        entries = OffsetCheckpointFile(log.dir.parent / CLEANER_OFFSET_CHECKPOINT).read()
        assert list(entries) == [("table", logs.index(log))]
    m.delete_log("table", 0)
    assert set(m.cleaner.checkpoints()) == {("table", 1)}
    assert OffsetCheckpointFile(logs[0].dir.parent / CLEANER_OFFSET_CHECKPOINT).read() == {}
    m.shutdown()


def test_a_disabled_cleaner_cleans_nothing(tmp_path, clock):
    m = manager([tmp_path], clock, cleaner=CleanerConfig(enable=False))
    log = m.get_or_create_log("table", 0)
    fill(log, Oracle(), keys=5, rounds=8, clock=clock)
    size = log.size
    m.tick()
    m.wait_for_cleaning()
    assert m.clean_logs() is None and log.size == size
    assert not (tmp_path / CLEANER_OFFSET_CHECKPOINT).exists()
    m.shutdown()


def test_the_offset_map_is_allocated_only_when_a_log_is_cleaned(tmp_path, clock):
    m = manager([tmp_path], clock, cleaner=CleanerConfig())  # the default 128 MiB
    m.get_or_create_log("plain", 0, LogConfig())
    m.tick()
    m.wait_for_cleaning()
    assert m.cleaner is not None and m.cleaner.offset_map is None
    m.shutdown()


def test_shutdown_during_a_round_stops_the_pass_cleanly(tmp_path, clock, monkeypatch):
    import storage.log_cleaner as module

    m = manager([tmp_path], clock)
    log = m.get_or_create_log("table", 0)
    oracle = Oracle()
    fill(log, oracle, keys=5, rounds=8, clock=clock)
    real = module.filter_batch  # type: ignore[attr-defined]

    def filter_then_stop(*args, **kwargs):
        assert m.cleaner is not None
        m.cleaner._stopped = True  # what shutdown() sets before waiting for the pass
        return real(*args, **kwargs)

    monkeypatch.setattr(module, "filter_batch", filter_then_stop)
    assert m.clean_logs() is None
    m.shutdown()
    leftovers = [p for p in log.dir.iterdir() if p.name.endswith((".cleaned", ".swap"))]
    assert leftovers == []
    m = manager([tmp_path], clock)
    reopened = m.get_log("table", 0)
    assert reopened is not None
    reopened.update_high_watermark(reopened.log_end_offset)
    oracle.check(reopened)
    assert len(read_log(reopened)) == 40  # nothing was cleaned
    m.shutdown()


def test_tick_does_not_wait_for_a_pass_another_thread_runs(tmp_path, clock, monkeypatch):
    m = manager([tmp_path], clock)
    log = m.get_or_create_log("table", 0)
    other = m.get_or_create_log("other", 0)
    fill(log, Oracle(), keys=5, rounds=8, clock=clock)
    fill(other, Oracle(), keys=5, rounds=8, clock=clock)
    size = other.size
    assert m.cleaner is not None
    with PassBlocker(monkeypatch, ("table", 0)) as blocked:
        holder = threading.Thread(target=m.cleaner.clean_log, args=(("table", 0), log))
        holder.start()
        assert blocked.entered.wait(60)  # the only cleaner thread is busy
        m.tick()  # its worker finds no free thread
        m.wait_for_cleaning()
        assert m.clean_logs(wait=False) is None
        assert other.size == size
    holder.join()
    assert m.clean_logs() is not None
    m.shutdown()


def test_tick_cleans_two_logs_at_once_with_two_threads(tmp_path, clock, monkeypatch):
    m = LogManager([tmp_path], COMPACT, clock, QUIET, SMALL_MAP, cleaner_threads=2)
    first = m.get_or_create_log("first", 0)
    second = m.get_or_create_log("second", 0)
    oracle = Oracle()
    fill(first, Oracle(), keys=5, rounds=8, clock=clock)
    fill(second, oracle, keys=5, rounds=8, clock=clock)
    size = second.size
    assert m.cleaner is not None
    with PassBlocker(monkeypatch, ("first", 0)) as blocked:
        holder = threading.Thread(target=m.cleaner.clean_log, args=(("first", 0), first))
        holder.start()
        assert blocked.entered.wait(60)
        m.tick()  # a worker takes the other log, the first being in progress
        assert blocked.others_done.wait(60)
        m.wait_for_cleaning()
        assert second.size < size
        oracle.check(second)
        assert m.cleaner.in_progress == {("first", 0)}
    holder.join()
    assert set(m.cleaner.checkpoints()) == {("first", 0), ("second", 0)}
    m.shutdown()


def test_shutdown_stops_and_waits_for_the_cleaning_workers(tmp_path, clock, monkeypatch):
    m = LogManager([tmp_path], COMPACT, clock, QUIET, SMALL_MAP, cleaner_threads=2)
    log = m.get_or_create_log("table", 0)
    fill(log, Oracle(), keys=5, rounds=8, clock=clock)
    size = log.size
    with PassBlocker(monkeypatch, ("table", 0), until_stopped=True) as blocked:
        m.tick()
        assert blocked.entered.wait(60)
        m.shutdown()  # stops the blocked pass and waits for its worker
        assert m.cleaner is not None and m.cleaner.in_progress == set()
        assert not m._cleaning_workers
    assert log.size == size


def test_set_cleaner_threads_lets_more_rounds_run_at_once(tmp_path, clock, monkeypatch):
    m = manager([tmp_path], clock)
    first = m.get_or_create_log("first", 0)
    second = m.get_or_create_log("second", 0)
    fill(first, Oracle(), keys=5, rounds=8, clock=clock)
    fill(second, Oracle(), keys=5, rounds=8, clock=clock)
    assert m.cleaner is not None
    with PassBlocker(monkeypatch, ("first", 0)) as blocked:
        holder = threading.Thread(target=m.cleaner.clean_log, args=(("first", 0), first))
        holder.start()
        assert blocked.entered.wait(60)
        assert m.clean_logs(wait=False) is None  # one thread, busy
        m.set_cleaner_threads(2)
        stats = m.clean_logs(wait=False)
        assert stats is not None and m.cleaner.last_stats is stats
        assert m.cleaner.checkpoints() == {("second", 0): stats.end_offset}
    holder.join()
    m.shutdown()
