"""A share fetch's read as batches to acquire or archive: control batches and, read_committed,
the aborted transactions' batches are skipped (node.share.manager.fetched_batches)."""

from __future__ import annotations

from node.core.requests import FetchResult
from node.share.manager import fetched_batches
from node.share.partition import FetchedBatch
from odradek.records import Record, build_batch
from odradek.records.control import ControlRecordType, EndTransactionMarker, build_end_txn_marker


def _plain(base: int, count: int) -> bytes:
    return build_batch([Record(key=None, value=b"v")] * count, base_offset=base)


def _txn(base: int, pid: int) -> bytes:
    return build_batch(
        [Record(key=None, value=b"t")],
        base_offset=base,
        producer_id=pid,
        producer_epoch=0,
        base_sequence=0,
        is_transactional=True,
    )


def _marker(base: int, pid: int, kind: ControlRecordType) -> bytes:
    return build_end_txn_marker(
        EndTransactionMarker(kind, 0),
        producer_id=pid,
        producer_epoch=0,
        timestamp=0,
        base_offset=base,
    )


LOG = (
    _plain(0, 2)
    + _txn(2, 7)
    + _txn(3, 8)
    + _marker(4, 7, ControlRecordType.ABORT)
    + _marker(5, 8, ControlRecordType.COMMIT)
    + _txn(6, 7)
)


def test_read_committed_skips_aborted_batches_and_markers() -> None:
    read = FetchResult("t", 0, aborted_transactions=((7, 2),))
    assert fetched_batches(LOG, read, 0) == [
        FetchedBatch(0, 1),
        FetchedBatch(2, 2, skip=True),  # pid 7's aborted transaction
        FetchedBatch(3, 3),  # pid 8's, committed
        FetchedBatch(4, 4, skip=True),
        FetchedBatch(5, 5, skip=True),
        FetchedBatch(6, 6),  # pid 7's next transaction, after its abort marker
    ]


def test_read_uncommitted_skips_only_control_batches() -> None:
    read = FetchResult("t", 0)
    assert [b.skip for b in fetched_batches(LOG, read, 0)] == [
        False,
        False,
        False,
        True,
        True,
        False,
    ]


def test_batches_before_the_fetch_offset_and_a_partial_tail_are_left_out() -> None:
    read = FetchResult("t", 0)
    assert fetched_batches(LOG[:-5], read, 2) == [
        FetchedBatch(2, 2),
        FetchedBatch(3, 3),
        FetchedBatch(4, 4, skip=True),
        FetchedBatch(5, 5, skip=True),
    ]
