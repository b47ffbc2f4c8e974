"""The read_committed filter of the Spark reader: which batches of a fetch answer are dropped."""

from __future__ import annotations

from odradek.records import Record, build_batch, read_batches
from odradek.records.control import ControlRecordType, EndTransactionMarker, build_end_txn_marker
from odradek.spark.reader import AbortedTransactions


def data(offset: int, producer_id: int = -1, n: int = 2) -> bytes:
    transactional = producer_id >= 0
    return build_batch(
        [Record(None, b"v", [])] * n,
        base_offset=offset,
        producer_id=producer_id,
        producer_epoch=0 if transactional else -1,
        base_sequence=0 if transactional else -1,
        is_transactional=transactional,
    )


def marker(offset: int, producer_id: int, kind: ControlRecordType) -> bytes:
    return build_end_txn_marker(
        EndTransactionMarker(kind, 0),
        producer_id=producer_id,
        producer_epoch=0,
        timestamp=0,
        base_offset=offset,
    )


def kept(answer: bytes, aborted: list[tuple[int, int]]) -> list[int]:
    filt = AbortedTransactions(aborted)
    return [b.base_offset for b in read_batches(answer) if not filt.drops(b)]


def test_aborted_transactions_and_markers_are_dropped_committed_and_plain_kept():
    answer = b"".join(
        [
            data(0),  # not transactional
            data(2, producer_id=7),  # aborted (first offset 2)
            data(4, producer_id=8),  # committed
            data(6, producer_id=7),  # still aborted
            marker(8, 7, ControlRecordType.ABORT),
            marker(9, 8, ControlRecordType.COMMIT),
            data(10, producer_id=7),  # producer 7's next transaction: committed
            marker(12, 7, ControlRecordType.COMMIT),
        ]
    )
    assert kept(answer, [(7, 2)]) == [0, 4, 10]


def test_an_aborted_transaction_starts_at_its_first_offset_only():
    # producer 7 committed a transaction before its aborted one began at offset 4
    answer = b"".join(
        [
            data(0, producer_id=7),
            marker(2, 7, ControlRecordType.COMMIT),
            data(4, producer_id=7),
            marker(6, 7, ControlRecordType.ABORT),
        ]
    )
    assert kept(answer, [(7, 4)]) == [0]


def test_without_aborted_transactions_only_markers_are_dropped():
    answer = b"".join([data(0, producer_id=3), marker(2, 3, ControlRecordType.COMMIT), data(3)])
    assert kept(answer, []) == [0, 3]
