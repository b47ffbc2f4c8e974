"""ProducerStateManager: each sequence/epoch rule, duplicates, wrap-around, snapshots."""

from __future__ import annotations

import struct
from pathlib import Path

import crc32c
import pytest

from odradek import errors
from odradek.errors import InvalidProducerEpochError, OutOfOrderSequenceError
from storage.producer_state import (
    INT32_MAX,
    NUM_BATCHES_TO_RETAIN,
    AppendOrigin,
    CorruptSnapshotError,
    ProducerBatch,
    ProducerStateEntry,
    ProducerStateManager,
    decode_snapshot,
    decrement_sequence,
    encode_snapshot,
    increment_sequence,
    read_snapshot,
    snapshot_file,
)

CLIENT, REPLICATION = AppendOrigin.CLIENT, AppendOrigin.REPLICATION
DAY = 86_400_000


@pytest.fixture
def psm(tmp_path: Path) -> ProducerStateManager:
    d = tmp_path / "t-0"
    d.mkdir()
    return ProducerStateManager(d, DAY)


class Appender:
    """Appends batches to a manager as a log would: offsets follow each other."""

    def __init__(self, psm: ProducerStateManager) -> None:
        self.psm = psm
        self.next_offset = 0

    def batch(
        self, pid: int, epoch: int, seq: int, count: int = 1, ts: int = 1000
    ) -> ProducerBatch:
        return ProducerBatch(pid, epoch, seq, self.next_offset, self.next_offset + count - 1, ts)

    def append(
        self,
        pid: int,
        epoch: int,
        seq: int,
        count: int = 1,
        origin: AppendOrigin = CLIENT,
        ts: int = 1000,
    ) -> object:
        b = self.batch(pid, epoch, seq, count, ts)
        analysis = self.psm.analyze([b], origin)
        if analysis.duplicate is not None:
            return analysis.duplicate
        self.next_offset = b.last_offset + 1
        self.psm.apply(analysis, self.next_offset)
        return None


def test_error_codes_and_retriable_match_kafka() -> None:
    assert (errors.OutOfOrderSequenceError.code, errors.OutOfOrderSequenceError.retriable) == (
        45,
        False,
    )
    assert errors.DuplicateSequenceError.code == 46
    assert (errors.InvalidProducerEpochError.code, errors.InvalidProducerEpochError.retriable) == (
        47,
        False,
    )
    assert (errors.UnknownProducerIdError.code, errors.UnknownProducerIdError.retriable) == (
        59,
        False,
    )
    assert errors.CoordinatorLoadInProgressError.code == 14
    assert errors.CoordinatorLoadInProgressError.retriable


def test_sequences_in_order_are_accepted(psm: ProducerStateManager) -> None:
    a = Appender(psm)
    assert a.append(7, 0, 0, count=3) is None
    assert a.append(7, 0, 3, count=2) is None
    entry = psm.last_entry(7)
    assert entry is not None
    assert (entry.producer_epoch, entry.last_seq, entry.last_data_offset) == (0, 4, 4)
    assert entry.batches[0].first_seq == 0 and entry.batches[-1].first_seq == 3


def test_a_gap_is_out_of_order(psm: ProducerStateManager) -> None:
    a = Appender(psm)
    a.append(7, 0, 0, count=2)
    with pytest.raises(OutOfOrderSequenceError):
        a.append(7, 0, 3)
    with pytest.raises(OutOfOrderSequenceError):
        a.append(7, 0, 1)  # overlaps, not an exact duplicate
    assert psm.last_entry(7).last_seq == 1  # type: ignore[union-attr]


def test_exact_duplicate_of_any_of_the_last_five_returns_the_original(
    psm: ProducerStateManager,
) -> None:
    a = Appender(psm)
    for i in range(7):
        a.append(7, 0, i * 2, count=2)
    # the last five batches: sequences 4..13 at offsets 4..13
    for i in range(2, 7):
        dup = a.append(7, 0, i * 2, count=2)
        assert dup is not None
        assert (dup.first_offset, dup.last_offset) == (i * 2, i * 2 + 1)  # type: ignore[attr-defined]
    assert a.next_offset == 14
    # older than the cached five: no longer recognised, and out of order
    with pytest.raises(OutOfOrderSequenceError):
        a.append(7, 0, 2, count=2)
    assert len(psm.last_entry(7).batches) == NUM_BATCHES_TO_RETAIN  # type: ignore[union-attr]


def test_duplicate_in_another_epoch_is_not_a_duplicate(psm: ProducerStateManager) -> None:
    a = Appender(psm)
    a.append(7, 0, 0)
    a.append(7, 1, 0)
    with pytest.raises(InvalidProducerEpochError):
        a.append(7, 0, 0)


def test_stale_epoch_is_refused(psm: ProducerStateManager) -> None:
    a = Appender(psm)
    a.append(7, 3, 0)
    with pytest.raises(InvalidProducerEpochError):
        a.append(7, 2, 1)


def test_new_epoch_must_start_at_zero_and_forgets_the_old_batches(
    psm: ProducerStateManager,
) -> None:
    a = Appender(psm)
    a.append(7, 0, 0, count=5)
    with pytest.raises(OutOfOrderSequenceError):
        a.append(7, 1, 5)
    assert a.append(7, 1, 0) is None
    entry = psm.last_entry(7)
    assert entry is not None and entry.producer_epoch == 1 and len(entry.batches) == 1


def test_unknown_producer_is_accepted_at_any_sequence(psm: ProducerStateManager) -> None:
    # Kafka since KIP-360: no state (new, expired, removed by retention) → accept.
    a = Appender(psm)
    assert a.append(9, 4, 1234) is None
    assert a.append(9, 4, 1235) is None
    with pytest.raises(OutOfOrderSequenceError):
        a.append(9, 4, 1237)


def test_sequence_wraps_from_int32_max_to_zero(psm: ProducerStateManager) -> None:
    a = Appender(psm)
    a.append(7, 0, INT32_MAX - 1, count=2)  # INT32_MAX - 1, INT32_MAX
    assert psm.last_entry(7).last_seq == INT32_MAX  # type: ignore[union-attr]
    assert a.append(7, 0, 0, count=3) is None
    assert psm.last_entry(7).last_seq == 2  # type: ignore[union-attr]
    # a batch that wraps inside itself
    b = Appender(psm)
    b.next_offset = 100
    b.append(8, 0, INT32_MAX - 1)
    assert b.append(8, 0, INT32_MAX, count=3) is None  # INT32_MAX, 0, 1
    entry = psm.last_entry(8)
    assert entry is not None and entry.last_seq == 1 and entry.batches[-1].first_seq == INT32_MAX
    dup = b.append(8, 0, INT32_MAX, count=3)
    assert dup is not None
    assert b.append(8, 0, 2) is None


def test_sequence_arithmetic_wraps() -> None:
    assert increment_sequence(INT32_MAX, 1) == 0
    assert increment_sequence(INT32_MAX - 1, 3) == 1
    assert increment_sequence(5, 3) == 8
    assert decrement_sequence(1, 3) == INT32_MAX - 1
    assert decrement_sequence(8, 3) == 5


def test_several_batches_of_one_append_chain(psm: ProducerStateManager) -> None:
    batches = [ProducerBatch(7, 0, 0, 0, 1, 10), ProducerBatch(7, 0, 2, 2, 2, 11)]
    analysis = psm.analyze(batches, CLIENT)
    psm.apply(analysis, 3)
    assert psm.last_entry(7).last_seq == 2  # type: ignore[union-attr]
    bad = [ProducerBatch(7, 0, 3, 3, 3, 10), ProducerBatch(7, 0, 5, 4, 4, 11)]
    with pytest.raises(OutOfOrderSequenceError):
        psm.analyze(bad, CLIENT)
    assert psm.last_entry(7).last_seq == 2  # type: ignore[union-attr]


def test_replication_applies_without_validation(psm: ProducerStateManager) -> None:
    a = Appender(psm)
    a.append(7, 5, 0)
    assert a.append(7, 5, 10, origin=REPLICATION) is None  # a gap
    assert a.append(7, 3, 0, origin=REPLICATION) is None  # a stale epoch
    assert a.append(7, 3, 0, origin=REPLICATION) is None  # a "duplicate" is appended
    assert psm.last_entry(7).producer_epoch == 3  # type: ignore[union-attr]
    assert a.next_offset == 4


def test_expiration_and_removal_below_log_start(psm: ProducerStateManager) -> None:
    a = Appender(psm)
    a.append(1, 0, 0, ts=1000)
    a.append(2, 0, 0, ts=5000)
    assert psm.remove_expired_producers(1000 + DAY - 1) == []
    assert psm.remove_expired_producers(1000 + DAY) == [1]
    assert list(psm.producers) == [2]
    a.append(3, 0, 0, ts=5000)  # offset 2
    assert psm.remove_producers_below(2) == [2]
    assert list(psm.producers) == [3]


def test_snapshot_format_is_kafkas(psm: ProducerStateManager) -> None:
    entry = ProducerStateEntry(42, 3, (), -1, 777, -1)
    a = Appender(psm)
    a.append(42, 3, 10, count=4, ts=777)
    data = encode_snapshot(psm.producers.values())
    version, crc, count = struct.unpack_from(">hIi", data)
    assert (version, count, len(data)) == (1, 1, 10 + 46)
    assert crc == crc32c.crc32c(data[6:])
    fields = struct.unpack_from(">qhiqiqiq", data, 10)
    assert fields == (42, 3, 13, 3, 3, 777, -1, -1)
    [back] = decode_snapshot(data)
    assert back.producer_id == 42 and back.last_seq == 13 and back.batches[0].first_seq == 10
    # an entry with no batch saves -1/-1 and restores no batch
    [empty] = decode_snapshot(encode_snapshot([entry]))
    assert empty.is_empty and empty.producer_epoch == 3


def test_corrupt_snapshots_are_refused() -> None:
    data = bytearray(encode_snapshot([ProducerStateEntry(1, 0)]))
    data[-1] ^= 1
    with pytest.raises(CorruptSnapshotError):
        decode_snapshot(bytes(data))
    with pytest.raises(CorruptSnapshotError):
        decode_snapshot(b"\x00\x02" + bytes(data[2:]))
    with pytest.raises(CorruptSnapshotError):
        decode_snapshot(b"\x00")


def test_snapshot_and_reload(psm: ProducerStateManager, tmp_path: Path) -> None:
    a = Appender(psm)
    a.append(1, 0, 0, count=2)
    assert psm.take_snapshot() == 2
    assert psm.take_snapshot() is None
    a.append(2, 0, 0)
    assert psm.take_snapshot() == 3
    assert snapshot_file(psm._dir, 3).name == "00000000000000000003.snapshot"
    assert [e.producer_id for e in read_snapshot(snapshot_file(psm._dir, 3))] == [1, 2]
    # a corrupt latest snapshot is deleted and the older one is loaded
    snapshot_file(psm._dir, 3).write_bytes(b"garbage")
    fresh = ProducerStateManager(psm._dir, DAY)
    fresh.truncate_and_reload(0, 3, now_ms=1000)
    assert fresh.map_end_offset == 2 and list(fresh.producers) == [1]
    assert fresh.snapshots == [2]
    # snapshots above the log end are dropped; with none, the state starts at the log start
    fresh.truncate_and_reload(0, 1, now_ms=1000)
    assert fresh.snapshots == [] and fresh.map_end_offset == 0 and not fresh.producers


def test_reload_leaves_out_expired_producers(psm: ProducerStateManager) -> None:
    a = Appender(psm)
    a.append(1, 0, 0, ts=0)
    a.append(2, 0, 0, ts=DAY)
    psm.take_snapshot()
    fresh = ProducerStateManager(psm._dir, DAY)
    fresh.truncate_and_reload(0, 2, now_ms=DAY + 10)
    assert list(fresh.producers) == [2]


def test_truncate_fully_deletes_every_snapshot(psm: ProducerStateManager) -> None:
    a = Appender(psm)
    a.append(1, 0, 0)
    psm.take_snapshot()
    psm.truncate_fully_and_start_at(50)
    assert psm.snapshots == [] and not psm.producers and psm.map_end_offset == 50
    assert not list(psm._dir.glob("*.snapshot"))
