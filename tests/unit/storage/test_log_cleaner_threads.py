"""``log.cleaner.threads``: passes on distinct logs run at once, each with its own offset map
of ``dedupe_buffer_bytes / threads``, never two on one log (Kafka's CleanerThreads and
LogCleanerManager's ``inProgress``), and the count changes without a restart (Kafka's
``LogCleaner.reconfigure``)."""

from __future__ import annotations

import threading

import pytest

from odradek.clock import ManualClock
from storage import Log, LogConfig
from storage.config import CleanerConfig
from storage.log_cleaner import LogCleaner
from tests.unit.storage.compaction_helpers import Oracle, PassBlocker, keyed_batch

DEDUPE = 1 << 16
COMPACT = LogConfig(cleanup_policy="compact", segment_bytes=1024, file_delete_delay_ms=0)


def dirty_log(tmp_path, clock: ManualClock, topic: str, oracle: Oracle | None = None) -> Log:
    log = Log.open(tmp_path / f"{topic}-0", COMPACT, clock)
    oracle = oracle or Oracle()
    for r in range(8):
        for k in range(5):
            pairs = [(f"k{k}".encode(), f"v{r}".encode())]
            info = log.append_as_leader(keyed_batch(pairs, clock.wall_ms()), leader_epoch=0)
            oracle.append(info.first_offset, pairs)
    log.roll()
    log.update_high_watermark(log.log_end_offset)
    return log


def cleaner(tmp_path, clock, threads: int) -> LogCleaner:
    return LogCleaner([tmp_path], CleanerConfig(dedupe_buffer_bytes=DEDUPE), clock, threads)


def test_two_threads_clean_two_logs_at_once(tmp_path, clock, monkeypatch):
    first = dirty_log(tmp_path, clock, "first")
    oracle = Oracle()
    second = dirty_log(tmp_path, clock, "second", oracle)
    size = second.size
    lc = cleaner(tmp_path, clock, threads=2)
    logs = {("first", 0): first, ("second", 0): second}
    with PassBlocker(monkeypatch, ("first", 0)) as blocked:
        holder = threading.Thread(target=lc.clean_log, args=(("first", 0), first))
        holder.start()
        assert blocked.entered.wait(60)
        # the first log's pass is still running: the other thread takes the second log
        stats = lc.clean_filthiest_log(logs, wait=False)
        assert stats is not None and second.size < size
        oracle.check(second)
        assert lc.in_progress == {("first", 0)}
        assert lc.checkpoints() == {("second", 0): stats.end_offset}
    holder.join()
    assert set(lc.checkpoints()) == {("first", 0), ("second", 0)}
    # each pass had its own map, of half the buffer
    maps = lc.offset_maps
    assert len(maps) == 2 and maps[0] is not maps[1]
    assert all(m.memory_bytes <= DEDUPE // 2 for m in maps)
    lc.shutdown()


def test_a_log_is_never_cleaned_by_two_passes_at_once(tmp_path, clock, monkeypatch):
    log = dirty_log(tmp_path, clock, "table")
    lc = cleaner(tmp_path, clock, threads=2)
    with PassBlocker(monkeypatch, ("table", 0)) as blocked:
        passes = [threading.Thread(target=lc.clean_log, args=(("table", 0), log)) for _ in range(2)]
        passes[0].start()
        assert blocked.entered.wait(60)
        passes[1].start()  # waits for the first pass, though a thread is free
        assert lc.clean_filthiest_log({("table", 0): log}) is None  # the log is taken
    for p in passes:
        p.join()
    assert blocked.most_at_once == {("table", 0): 1}
    assert lc.in_progress == set()
    lc.shutdown()


def test_one_thread_runs_one_pass_at_a_time(tmp_path, clock, monkeypatch):
    first = dirty_log(tmp_path, clock, "first")
    second = dirty_log(tmp_path, clock, "second")
    lc = cleaner(tmp_path, clock, threads=1)
    with PassBlocker(monkeypatch, ("first", 0)) as blocked:
        holder = threading.Thread(target=lc.clean_log, args=(("first", 0), first))
        holder.start()
        assert blocked.entered.wait(60)
        assert lc.clean_filthiest_log({("second", 0): second}, wait=False) is None
    holder.join()
    assert lc.clean_filthiest_log({("second", 0): second}, wait=False) is not None
    lc.shutdown()


def test_set_threads_changes_the_count_and_the_map_size(tmp_path, clock, monkeypatch):
    first = dirty_log(tmp_path, clock, "first")
    second = dirty_log(tmp_path, clock, "second")
    lc = cleaner(tmp_path, clock, threads=1)
    assert lc.allocate_offset_map().memory_bytes > DEDUPE // 2
    with PassBlocker(monkeypatch, ("first", 0)) as blocked:
        holder = threading.Thread(target=lc.clean_log, args=(("first", 0), first))
        holder.start()
        assert blocked.entered.wait(60)
        lc.set_threads(2)  # the running pass keeps its map; the next get half the buffer
        assert lc.threads == 2 and lc.offset_maps == []
        stats = lc.clean_filthiest_log({("second", 0): second}, wait=False)
        assert stats is not None
        assert [m.memory_bytes <= DEDUPE // 2 for m in lc.offset_maps] == [True]
    holder.join()
    assert len(lc.offset_maps) == 1  # the old map was dropped when its pass ended
    lc.set_threads(1)
    assert lc.allocate_offset_map().memory_bytes > DEDUPE // 2
    with pytest.raises(ValueError):
        lc.set_threads(0)
    lc.shutdown()
