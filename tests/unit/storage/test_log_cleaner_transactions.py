"""Compaction and transactions (Kafka's LogCleanerTest transaction cases): aborted batches are
removed and their keys supersede nothing, markers stay until their transaction's data is gone
and then for delete.retention.ms, the .txnindex follows the cleaned segments, an active
producer's last batch or marker stays, and nothing at or above the LSO is cleaned."""

from __future__ import annotations

from pathlib import Path

from odradek.clock import ManualClock
from odradek.records import read_batches
from storage import Log, LogConfig
from storage.config import CleanerConfig
from storage.log_cleaner import LogCleaner
from storage.transaction_index import AbortedTxn
from tests.storage_helpers import open_log
from tests.unit.storage.compaction_helpers import keyed_batch
from tests.unit.storage.txn_helpers import ABORT, COMMIT, marker, raw, txn_batch

DAY = 86_400_000
CONFIG = LogConfig(
    cleanup_policy="compact",
    segment_bytes=100_000,
    file_delete_delay_ms=0,
    delete_retention_ms=DAY,
)


def _cleaner(tmp_path: Path, clock: ManualClock) -> LogCleaner:
    return LogCleaner([tmp_path], CleanerConfig(dedupe_buffer_bytes=1 << 16), clock)


def _batches(log: Log) -> list[tuple[int, int, bool, int, list[tuple[bytes | None, bytes | None]]]]:
    """(base offset, producer id, control, record count, [(key, value)]) of every batch."""
    return [
        (
            b.base_offset,
            b.producer_id,
            b.is_control,
            b.records_count,
            [(r.key, r.value) for r in b.records()],
        )
        for b in read_batches(raw(log))
    ]


def _values(log: Log) -> dict[bytes, bytes | None]:
    table: dict[bytes, bytes | None] = {}
    for _, _, control, _, records in _batches(log):
        if not control:
            for k, v in records:
                assert k is not None
                table[k] = v
    return table


def _txnindex(log: Log) -> list[AbortedTxn]:
    return [entry for s in log.segments() for entry in s.txn_index]


def _clean(cleaner: LogCleaner, log: Log) -> None:
    """A pass over everything below a new active segment (with a new record of key d, so that
    there is a dirty section to clean)."""
    log.append_as_leader(keyed_batch([(b"d", b"d")], timestamp=1), 0)
    log.roll()
    log.update_high_watermark(log.log_end_offset)
    assert cleaner.clean_log(("t", 0), log) is not None


def _transactions(tmp_path: Path, clock: ManualClock) -> Log:
    log = open_log(tmp_path, clock, CONFIG, name="t-0")
    log.append_as_leader(keyed_batch([(b"a", b"a0"), (b"b", b"b0")], timestamp=1), 0)  # 0..1
    log.append_as_leader(txn_batch(1, 0, key=b"a", tag="aborted-"), 0)  # 2: aborted
    log.append_as_leader(txn_batch(2, 0, key=b"b", tag="committed-"), 0)  # 3: committed
    log.append_transaction_marker(1, 0, marker(ABORT), 0)  # 4
    log.append_transaction_marker(2, 0, marker(COMMIT), 0)  # 5
    log.append_as_leader(keyed_batch([(b"c", b"c0")], timestamp=1), 0)  # 6
    return log


def test_aborted_records_go_and_supersede_nothing(tmp_path: Path, clock: ManualClock) -> None:
    log = _transactions(tmp_path, clock)
    assert _txnindex(log) == [AbortedTxn(1, 2, 4, 3)]
    cleaner = _cleaner(tmp_path, clock)
    _clean(cleaner, log)
    # a's aborted write neither survives nor removes a0; b's committed write wins
    assert _values(log) == {b"a": b"a0", b"b": b"committed-2-0", b"c": b"c0", b"d": b"d"}
    batches = _batches(log)
    # producer 1's aborted batch is its last data batch: kept as an empty header
    assert (2, 1, False, 0, []) in batches
    # both markers stay this pass: the abort's data was removed just now, so is its entry kept
    assert [b[0] for b in batches if b[2]] == [4, 5]
    assert _txnindex(log) == [AbortedTxn(1, 2, 4, 3)]
    assert (tmp_path / "t-0" / "00000000000000000000.txnindex").stat().st_size == 34


def _controls(log: Log) -> dict[int, int | None]:
    """Each marker's offset and delete horizon."""
    return {b.base_offset: b.delete_horizon_ms for b in read_batches(raw(log)) if b.is_control}


def test_markers_stay_while_their_data_does_then_for_the_delete_retention(
    tmp_path: Path, clock: ManualClock
) -> None:
    log = _transactions(tmp_path, clock)
    cleaner = _cleaner(tmp_path, clock)
    _clean(cleaner, log)  # pass 1: the aborted batch emptied (producer 1's last)
    clock.advance(2 * DAY)  # both producers expire: no batch is kept for their sake
    log.append_as_leader(keyed_batch([(b"b", b"b1")], timestamp=1), 0)  # supersedes 3
    _clean(cleaner, log)  # pass 2: the empty aborted batch and the committed one read, gone
    assert not [b for b in _batches(log) if b[0] in (2, 3)]
    assert _controls(log) == {4: None, 5: None}
    assert _txnindex(log) == [AbortedTxn(1, 2, 4, 3)]  # its data was removed by this pass
    now = clock.wall_ms()
    _clean(cleaner, log)  # pass 3: no data of either left: a delete horizon each
    assert _controls(log) == {4: now + DAY, 5: now + DAY}
    assert _txnindex(log) == []
    # the markers read as markers still, with their timestamps
    assert {r.timestamp for b in read_batches(raw(log)) if b.is_control for r in b.records()} == {
        clock.wall_ms() - 2 * DAY
    }
    _clean(cleaner, log)  # pass 4: before the horizon, nothing changes
    assert _controls(log) == {4: now + DAY, 5: now + DAY}
    clock.advance(DAY)
    _clean(cleaner, log)  # pass 5: past it, they go
    assert _controls(log) == {}
    assert _values(log) == {b"a": b"a0", b"b": b"b1", b"c": b"c0", b"d": b"d"}


def test_an_active_producers_aborted_batch_keeps_its_marker(
    tmp_path: Path, clock: ManualClock
) -> None:
    # as Kafka: the emptied batch still holds producer 1's last sequence, and reading it again
    # counts as data of the aborted transaction, so the marker and its entry stay
    log = _transactions(tmp_path, clock)
    cleaner = _cleaner(tmp_path, clock)
    for _ in range(3):
        _clean(cleaner, log)
    assert (2, 1, False, 0, []) in _batches(log)
    assert 4 in _controls(log) and _txnindex(log) == [AbortedTxn(1, 2, 4, 3)]


def test_marker_of_an_active_producer_without_data_stays_empty(
    tmp_path: Path, clock: ManualClock
) -> None:
    config = LogConfig(
        cleanup_policy="compact",
        file_delete_delay_ms=0,
        delete_retention_ms=DAY,
        producer_id_expiration_ms=10 * DAY,
    )
    log = open_log(tmp_path, clock, config, name="t-0")
    log.append_transaction_marker(9, 3, marker(ABORT), 0)  # a marker and no data: epoch 3
    log.append_as_leader(keyed_batch([(b"a", b"a0")], timestamp=1), 0)
    cleaner = _cleaner(tmp_path, clock)
    _clean(cleaner, log)
    log.append_as_leader(keyed_batch([(b"a", b"a1")], timestamp=1), 0)
    clock.advance(2 * DAY)
    _clean(cleaner, log)
    # past its delete horizon the marker goes, but as the producer's last it stays, emptied
    (control,) = [b for b in read_batches(raw(log)) if b.is_control]
    assert (control.base_offset, control.producer_id, control.producer_epoch) == (0, 9, 3)
    assert control.records_count == 0
    log.close()
    for p in (tmp_path / "t-0").glob("*.snapshot"):
        p.unlink()
    reopened = Log.open(tmp_path / "t-0", config, clock)
    assert reopened.producer_state()[9].producer_epoch == 3


def test_nothing_at_or_above_the_lso_is_cleaned(tmp_path: Path, clock: ManualClock) -> None:
    log = open_log(tmp_path, clock, CONFIG, name="t-0")
    log.append_as_leader(keyed_batch([(b"a", b"a0")], timestamp=1), 0)  # 0
    log.append_as_leader(txn_batch(1, 0, key=b"z"), 0)  # 1: open
    log.roll()
    log.append_as_leader(keyed_batch([(b"a", b"a1")], timestamp=1), 0)  # 2
    log.roll()
    log.update_high_watermark(log.log_end_offset)
    assert log.last_stable_offset() == 1
    cleaner = _cleaner(tmp_path, clock)
    cleaner.clean_log(("t", 0), log)
    # the LSO (1) is in the first segment: nothing is cleanable, a0 is not superseded
    assert _values(log)[b"a"] == b"a1"
    assert next(r for b in _batches(log) for r in b[4]) == (b"a", b"a0")


def test_cleaned_txnindex_survives_reopen(tmp_path: Path, clock: ManualClock) -> None:
    log = _transactions(tmp_path, clock)
    cleaner = _cleaner(tmp_path, clock)
    _clean(cleaner, log)
    before = (_txnindex(log), log.last_stable_offset(), _batches(log))
    hw = log.high_watermark
    log.flush()
    log.close()
    reopened = open_log(
        tmp_path,
        clock,
        CONFIG,
        name="t-0",
        recovery_point=0,
        high_watermark=hw,
    )
    assert (_txnindex(reopened), reopened.last_stable_offset(), _batches(reopened)) == before


def test_an_interrupted_swap_keeps_its_txnindex(tmp_path: Path, clock: ManualClock) -> None:
    log = _transactions(tmp_path, clock)
    log.roll()
    log.flush()
    log.close()
    directory = tmp_path / "t-0"
    (segment,) = [s for s in log.segments() if len(s.txn_index)]
    # as if the cleaner had renamed its output .swap and crashed before dropping the suffix
    for suffix in (".log", ".index", ".timeindex", ".txnindex"):
        path = directory / f"{segment.base_offset:020d}{suffix}"
        path.rename(f"{path}.swap")
    reopened = open_log(tmp_path, clock, CONFIG, name="t-0", recovery_point=7)
    assert _txnindex(reopened) == [AbortedTxn(1, 2, 4, 3)]
    assert not list(directory.glob("*.swap"))


def test_a_log_closed_during_a_pass_aborts_it(tmp_path: Path, clock: ManualClock) -> None:
    log = _transactions(tmp_path, clock)
    log.roll()
    log.update_high_watermark(log.log_end_offset)
    cleaner = _cleaner(tmp_path, clock)
    original = log.collect_aborted_transactions

    def close_first(start: int, upper: int) -> list[AbortedTxn]:
        log.close()  # closed by a StopReplica while the pass reads the aborted transactions
        return original(start, upper)

    log.collect_aborted_transactions = close_first  # type: ignore[method-assign, assignment]
    assert cleaner.clean_log(("t", 0), log) is None
    assert cleaner.uncleanable_partitions == set()
