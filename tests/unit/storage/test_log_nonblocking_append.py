"""``Log.append_as_leader(blocking=False)``: the Kafka door appends on its event loop, so an
append that would wait for the log's lock, roll a segment or flush (``flush.messages``) raises
:class:`AppendWouldBlock` with nothing written, and the same append made blocking then does it."""

from __future__ import annotations

import threading

import pytest

from storage import LogConfig
from storage.errors import AppendWouldBlock
from tests.storage_helpers import all_records, make_batch, open_log, value_for


def test_an_append_that_needs_nothing_more_is_made_without_blocking(tmp_path, clock):
    log = open_log(tmp_path, clock)
    info = log.append_as_leader(make_batch(3), leader_epoch=2, blocking=False)
    assert (info.first_offset, info.last_offset) == (0, 2)
    assert all_records(log) == [(i, value_for(i)) for i in range(3)]


def test_a_lock_held_by_another_thread_is_not_waited_for(tmp_path, clock):
    log = open_log(tmp_path, clock)
    log.append_as_leader(make_batch(2), leader_epoch=0)
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with log._lock:
            held.set()
            release.wait(10)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert held.wait(10)
        with pytest.raises(AppendWouldBlock, match="lock is held"):
            log.append_as_leader(make_batch(3, first=2), leader_epoch=0, blocking=False)
        assert log.log_end_offset == 2
    finally:
        release.set()
        holder.join()
    log.append_as_leader(make_batch(3, first=2), leader_epoch=0, blocking=False)
    assert all_records(log) == [(i, value_for(i)) for i in range(5)]


def test_an_append_that_would_roll_a_segment_writes_nothing(tmp_path, clock):
    batch = make_batch(5)
    log = open_log(tmp_path, clock, LogConfig(segment_bytes=len(batch) * 2))
    log.append_as_leader(make_batch(5), leader_epoch=0, blocking=False)
    log.append_as_leader(make_batch(5, first=5), leader_epoch=0, blocking=False)
    with pytest.raises(AppendWouldBlock, match="roll"):
        log.append_as_leader(make_batch(5, first=10), leader_epoch=1, blocking=False)
    assert [s.base_offset for s in log.segments()] == [0]
    assert log.log_end_offset == 10
    assert log.latest_epoch == 0  # the refused append's epoch 1 is not recorded
    log.append_as_leader(make_batch(5, first=10), leader_epoch=1)  # a request thread's turn
    assert [s.base_offset for s in log.segments()] == [0, 10]
    assert all_records(log) == [(i, value_for(i)) for i in range(15)]


def test_an_append_that_would_flush_for_flush_messages_writes_nothing(tmp_path, clock):
    log = open_log(tmp_path, clock, LogConfig(flush_messages=5))
    log.append_as_leader(make_batch(3), leader_epoch=0, blocking=False)  # 3 unflushed
    with pytest.raises(AppendWouldBlock, match="flush"):
        log.append_as_leader(make_batch(3, first=3), leader_epoch=0, blocking=False)
    assert (log.log_end_offset, log.recovery_point) == (3, 0)
    log.append_as_leader(make_batch(3, first=3), leader_epoch=0)
    assert (log.log_end_offset, log.recovery_point) == (6, 6)


def test_bad_input_is_refused_as_it_would_be_blocking(tmp_path, clock):
    """The refusal comes first: a corrupt batch is the client's error, whatever the lock."""
    log = open_log(tmp_path, clock)
    corrupt = bytearray(make_batch(3))
    corrupt[-1] ^= 0xFF
    with pytest.raises(Exception) as refused:
        log.append_as_leader(bytes(corrupt), leader_epoch=0, blocking=False)
    assert not isinstance(refused.value, AppendWouldBlock)
    assert log.log_end_offset == 0
