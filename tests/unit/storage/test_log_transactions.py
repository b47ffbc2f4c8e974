"""The log's transactions: markers appended as leader (origin COORDINATOR) and by followers,
the .txnindex of each segment, the first unstable and last stable offsets, the aborted
transactions a fetch lists, and all of it rebuilt by recovery and truncation."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from odradek.clock import ManualClock
from odradek.errors import (
    InvalidProducerEpochError,
    InvalidRecordError,
    InvalidTxnStateError,
    TransactionCoordinatorFencedError,
)
from odradek.records import RecordBatch, end_txn_marker_of, read_batches
from storage import Log, LogConfig
from storage.producer_state import AppendOrigin, ProducerStateManager
from storage.transaction_index import AbortedTxn
from tests.storage_helpers import make_batch, open_log
from tests.unit.storage.txn_helpers import (
    ABORT,
    COMMIT,
    marker,
    marker_batch,
    raw,
    txn_batch,
)


def _abandon(log: Log) -> None:
    """Stop as a killed process would: no flush, no snapshot, no trimming."""
    for segment in log.segments():
        segment.close_handlers()


def _txnindex(log: Log) -> dict[int, list[AbortedTxn]]:
    return {s.base_offset: list(s.txn_index) for s in log.segments() if len(s.txn_index)}


def test_abort_marker_adds_an_entry_to_the_segments_txnindex(
    tmp_path: Path, clock: ManualClock
) -> None:
    log = open_log(tmp_path, clock)
    log.append_as_leader(txn_batch(1, 0, count=2), 0)  # 0..1
    log.append_as_leader(txn_batch(2, 0), 0)  # 2
    info = log.append_transaction_marker(1, 0, marker(ABORT), 0)  # 3
    assert (info.first_offset, info.last_offset) == (3, 3)
    log.append_transaction_marker(2, 0, marker(COMMIT, 1), 0)  # 4: a commit is not indexed
    assert _txnindex(log) == {0: [AbortedTxn(1, 0, 3, 2)]}
    path = tmp_path / "topic-0" / "00000000000000000000.txnindex"
    assert path.stat().st_size == 34
    (control,) = [b for b in read_batches(raw(log)) if b.base_offset == 3]
    assert control.is_control and control.is_transactional
    assert end_txn_marker_of(control) == marker(ABORT)
    assert control.max_timestamp == clock.wall_ms()


def test_last_stable_offset_follows_open_transactions_and_the_high_watermark(
    tmp_path: Path, clock: ManualClock
) -> None:
    log = open_log(tmp_path, clock)
    log.append_as_leader(make_batch(2), 0)  # 0..1: not transactional
    log.update_high_watermark(2)
    assert (log.first_unstable_offset(), log.last_stable_offset()) == (None, 2)
    log.append_as_leader(txn_batch(1, 0), 0)  # 2: opens
    log.append_as_leader(make_batch(1), 0)  # 3
    log.update_high_watermark(4)
    assert (log.first_unstable_offset(), log.last_stable_offset()) == (2, 2)
    log.update_high_watermark(1)
    assert log.last_stable_offset() == 1  # never above the high watermark
    log.append_transaction_marker(1, 0, marker(COMMIT), 0)  # 4
    log.update_high_watermark(4)
    assert log.last_stable_offset() == 2  # the marker is not yet committed
    log.update_high_watermark(5)
    assert (log.first_unstable_offset(), log.last_stable_offset()) == (None, 5)


def test_first_unstable_offset_is_never_below_the_log_start(
    tmp_path: Path, clock: ManualClock
) -> None:
    log = open_log(tmp_path, clock)
    log.append_as_leader(txn_batch(1, 0), 0)  # 0: opens
    log.append_as_leader(make_batch(3), 0)  # 1..3
    log.append_as_leader(txn_batch(1, 1), 0)  # 4: keeps producer 1 in the state
    log.update_high_watermark(5)
    log.delete_records(2)
    assert (log.first_unstable_offset(), log.last_stable_offset()) == (2, 2)


def test_clients_may_not_write_control_batches(tmp_path: Path, clock: ManualClock) -> None:
    log = open_log(tmp_path, clock)
    log.append_as_leader(txn_batch(1, 0), 0)
    with pytest.raises(InvalidRecordError):
        log.append_as_leader(marker_batch(1, ABORT), 0)
    info = log.append_as_leader(marker_batch(1, ABORT), 0, origin=AppendOrigin.COORDINATOR)
    assert info.first_offset == 1
    assert _txnindex(log) == {0: [AbortedTxn(1, 0, 1, 2)]}


def test_leader_refusals_write_nothing(tmp_path: Path, clock: ManualClock) -> None:
    log = open_log(tmp_path, clock)
    log.append_as_leader(txn_batch(1, 0, epoch=1), 0)
    with pytest.raises(InvalidTxnStateError):
        log.append_as_leader(txn_batch(1, 1, epoch=1, transactional=False), 0)
    with pytest.raises(InvalidProducerEpochError):
        log.append_transaction_marker(1, 0, marker(ABORT), 0)
    log.append_transaction_marker(1, 1, marker(COMMIT, 3), 0)
    log.append_as_leader(txn_batch(1, 1, epoch=1), 0)
    with pytest.raises(TransactionCoordinatorFencedError):
        log.append_transaction_marker(1, 1, marker(ABORT, 2), 0)
    assert log.log_end_offset == 3
    assert log.first_unstable_offset() == 0  # the commit at 1 is not below the HW yet
    log.update_high_watermark(3)
    assert log.first_unstable_offset() == 2


def test_follower_builds_the_same_state_and_index(tmp_path: Path, clock: ManualClock) -> None:
    leader = open_log(tmp_path, clock, name="leader-0")
    leader.append_as_leader(txn_batch(1, 0), 0)
    leader.append_as_leader(txn_batch(2, 0), 0)
    leader.append_as_leader(make_batch(1), 0)
    leader.append_transaction_marker(2, 0, marker(ABORT), 0)
    leader.append_as_leader(txn_batch(3, 0), 0)
    leader.append_transaction_marker(1, 0, marker(ABORT), 0)
    follower = open_log(tmp_path, clock, name="follower-0")
    follower.append_as_follower(raw(leader))  # every batch in one append
    assert (
        _txnindex(follower)
        == _txnindex(leader)
        == {0: [AbortedTxn(2, 1, 3, 0), AbortedTxn(1, 0, 5, 4)]}
    )
    for log in (leader, follower):
        log.update_high_watermark(log.log_end_offset)
    assert follower.last_stable_offset() == leader.last_stable_offset() == 4


def test_collect_aborted_transactions_across_segments(tmp_path: Path, clock: ManualClock) -> None:
    log = open_log(tmp_path, clock)
    log.append_as_leader(txn_batch(1, 0), 0)  # 0
    log.append_transaction_marker(1, 0, marker(ABORT), 0)  # 1
    log.roll()
    log.append_as_leader(txn_batch(2, 0), 0)  # 2
    log.append_as_leader(txn_batch(3, 0), 0)  # 3
    log.roll()
    log.append_transaction_marker(2, 0, marker(ABORT), 0)  # 4: LSO 3 (producer 3 open)
    log.append_transaction_marker(3, 0, marker(ABORT), 0)  # 5
    assert _txnindex(log) == {
        0: [AbortedTxn(1, 0, 1, 2)],
        4: [AbortedTxn(2, 2, 4, 3), AbortedTxn(3, 3, 5, 6)],
    }
    pids = [t.producer_id for t in log.collect_aborted_transactions(0, 6)]
    assert pids == [1, 2, 3]
    assert [t.producer_id for t in log.collect_aborted_transactions(2, 3)] == [2]
    assert [t.producer_id for t in log.collect_aborted_transactions(0, 1)] == [1]
    assert log.collect_aborted_transactions(6, 7) == []


def _transactional_log(tmp_path: Path, clock: ManualClock, config: LogConfig) -> Log:
    log = open_log(tmp_path, clock, config)
    for round_ in range(6):
        a, b = 2 * round_ + 1, 2 * round_ + 2
        log.append_as_leader(txn_batch(a, 0, count=2), 0)
        log.append_as_leader(txn_batch(b, 0), 0)
        log.append_as_leader(make_batch(1), 0)
        log.append_transaction_marker(a, 0, marker(ABORT if round_ % 2 else COMMIT), 0)
        if round_ != 5:
            log.append_transaction_marker(b, 0, marker(ABORT), 0)
    log.update_high_watermark(log.log_end_offset)
    return log


@pytest.mark.parametrize("clean", [True, False])
def test_reopen_rebuilds_index_and_open_transactions(
    tmp_path: Path, clock: ManualClock, clean: bool
) -> None:
    config = LogConfig(segment_bytes=600)
    log = _transactional_log(tmp_path, clock, config)
    assert log.num_segments > 2
    before = (_txnindex(log), log.first_unstable_offset(), log.last_stable_offset())
    recovery_point, hw = log.recovery_point, log.high_watermark
    if clean:
        log.flush()
        log.close()
        recovery_point = log.log_end_offset
    else:
        _abandon(log)
    reopened = open_log(
        tmp_path,
        clock,
        config,
        recovery_point=recovery_point,
        had_clean_shutdown=clean,
        high_watermark=hw,
    )
    after = (_txnindex(reopened), reopened.first_unstable_offset(), reopened.last_stable_offset())
    assert after == before
    assert before[1] is not None  # producer 12's transaction is still open


def test_unclean_reopen_rewrites_a_lost_txnindex(tmp_path: Path, clock: ManualClock) -> None:
    config = LogConfig(segment_bytes=600)
    log = _transactional_log(tmp_path, clock, config)
    before = _txnindex(log)
    _abandon(log)
    active = log.segments()[-1]
    for segment in log.segments():
        if segment.base_offset >= active.base_offset:
            segment.txn_index.path.unlink(missing_ok=True)
    reopened = open_log(tmp_path, clock, config, recovery_point=active.base_offset)
    assert _txnindex(reopened) == before


def test_corrupt_txnindex_is_rebuilt_at_open(tmp_path: Path, clock: ManualClock) -> None:
    config = LogConfig(segment_bytes=600)
    log = _transactional_log(tmp_path, clock, config)
    before = _txnindex(log)
    log.flush()
    log.close()
    first = min(before)
    second = sorted(before)[1]
    # an entry of a later segment in the first segment's file: out of order for its sanity check
    path = log.segments()[0].txn_index.path
    path.write_bytes(path.read_bytes() + before[second][0].encode() + before[first][0].encode())
    reopened = open_log(tmp_path, clock, config, recovery_point=log.log_end_offset)
    assert _txnindex(reopened) == before


def test_truncation_removes_entries_and_reopens_the_transaction(
    tmp_path: Path, clock: ManualClock
) -> None:
    log = open_log(tmp_path, clock)
    log.append_as_leader(txn_batch(1, 0), 0)  # 0
    log.append_as_leader(txn_batch(2, 0), 0)  # 1
    log.append_transaction_marker(1, 0, marker(ABORT), 0)  # 2
    log.append_transaction_marker(2, 0, marker(ABORT), 0)  # 3
    assert len(_txnindex(log)[0]) == 2
    log.truncate_to(3)
    assert _txnindex(log) == {0: [AbortedTxn(1, 0, 2, 1)]}
    log.update_high_watermark(3)
    assert log.first_unstable_offset() == 1
    log.truncate_to(2)
    assert _txnindex(log) == {}
    assert log.first_unstable_offset() == 0


def test_retention_deletes_the_txnindex_with_its_segment(
    tmp_path: Path, clock: ManualClock
) -> None:
    log = open_log(tmp_path, clock, LogConfig(file_delete_delay_ms=0))
    log.append_as_leader(txn_batch(1, 0), 0)
    log.append_transaction_marker(1, 0, marker(ABORT), 0)
    path = log.segments()[0].txn_index.path
    log.roll()
    log.append_as_leader(make_batch(1), 0)
    log.update_high_watermark(log.log_end_offset)
    log.delete_records(2)
    assert log.delete_old_segments() == 1
    assert not path.exists()
    assert not list((tmp_path / "topic-0").glob("*.txnindex*"))


def test_marker_on_a_compacted_topic(tmp_path: Path, clock: ManualClock) -> None:
    log = open_log(tmp_path, clock, LogConfig(cleanup_policy="compact"))
    log.append_as_leader(txn_batch(1, 0), 0)
    log.append_transaction_marker(1, 0, marker(ABORT), 0)
    assert RecordBatch(raw(log), len(txn_batch(1, 0))).is_control


@pytest.mark.parametrize("clean", [True, False])
def test_reopen_keeps_a_commit_above_the_high_watermark_unstable(
    tmp_path: Path, clock: ManualClock, clean: bool
) -> None:
    log = open_log(tmp_path, clock)
    log.append_as_leader(make_batch(1), 0)  # 0
    log.append_as_leader(txn_batch(1, 0), 0)  # 1
    log.append_transaction_marker(1, 0, marker(COMMIT), 0)  # 2
    log.roll()  # a producer snapshot at 3, where the transaction is over
    log.append_as_leader(make_batch(1), 0)  # 3
    log.update_high_watermark(2)  # the commit is not replicated yet
    assert log.last_stable_offset() == 1
    if clean:
        log.close()
    else:
        _abandon(log)
    reopened = open_log(
        tmp_path,
        clock,
        recovery_point=log.recovery_point,
        had_clean_shutdown=clean,
        high_watermark=2,
    )
    # loaded from the snapshot at 3 alone, the commit at 2 would be forgotten and the LSO 2
    assert reopened.last_stable_offset() == 1
    assert reopened.producer_snapshot_offsets()[-1] == 4


def test_clean_reopen_behind_the_high_watermark_loads_the_latest_snapshot(
    tmp_path: Path, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a follower stopped cleanly with its high watermark a little behind its end: with no
    # marker in between, the snapshot at the end is exact and is loaded (no replay); with one,
    # a snapshot at or below the high watermark is
    loaded: list[int] = []
    reload = ProducerStateManager.truncate_and_reload

    def spy(self: ProducerStateManager, *args: Any, **kwargs: Any) -> None:
        reload(self, *args, **kwargs)
        loaded.append(self.map_end_offset)

    monkeypatch.setattr(ProducerStateManager, "truncate_and_reload", spy)
    log = open_log(tmp_path, clock)
    for seq in range(5):
        log.append_as_leader(txn_batch(1, seq, transactional=False), 0)  # 0..4
    log.roll()  # a snapshot at 5
    for seq in range(5, 10):
        log.append_as_leader(txn_batch(1, seq, transactional=False), 0)  # 5..9
    log.close()  # a snapshot at 10
    reopened = open_log(
        tmp_path, clock, recovery_point=10, had_clean_shutdown=True, high_watermark=8
    )
    assert loaded[-1] == 10
    reopened.append_as_leader(txn_batch(2, 0), 0)  # 10
    reopened.append_transaction_marker(2, 0, marker(COMMIT), 0)  # 11
    reopened.close()  # a snapshot at 12
    again = open_log(tmp_path, clock, recovery_point=12, had_clean_shutdown=True, high_watermark=8)
    assert loaded[-1] == 5
    assert again.last_stable_offset() == 8
    assert again.producer_snapshot_offsets() == [5, 12]
