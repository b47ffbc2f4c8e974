"""Transactional batches and markers for the storage tests."""

from __future__ import annotations

from odradek.records import (
    ControlRecordType,
    EndTransactionMarker,
    Record,
    build_batch,
    build_end_txn_marker,
    end_txn_marker_of,
    read_batches,
)
from storage import Log
from storage.transaction_index import AbortedTxn

TS = 1_700_000_000_000
COMMIT, ABORT = ControlRecordType.COMMIT, ControlRecordType.ABORT


def txn_batch(
    pid: int,
    seq: int,
    count: int = 1,
    *,
    epoch: int = 0,
    transactional: bool = True,
    key: bytes = b"k",
    tag: str = "",
) -> bytes:
    """A client batch of producer ``pid`` whose values name the producer and the sequence."""
    records = [
        Record(key=key, value=f"{tag}{pid}-{seq + i}".encode(), timestamp=TS) for i in range(count)
    ]
    return build_batch(
        records,
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        is_transactional=transactional,
    )


def marker(control: ControlRecordType, coordinator_epoch: int = 0) -> EndTransactionMarker:
    return EndTransactionMarker(control, coordinator_epoch)


def marker_batch(
    pid: int, control: ControlRecordType, *, epoch: int = 0, coordinator_epoch: int = 0
) -> bytes:
    return build_end_txn_marker(
        marker(control, coordinator_epoch), producer_id=pid, producer_epoch=epoch, timestamp=TS
    )


def raw(log: Log) -> bytes:
    """The log's batches from its start to its end (segment after segment), as a follower
    would fetch them."""
    out = bytearray()
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        data = bytes(log.read(offset, 1 << 30).records)
        batches = list(read_batches(data))
        if not batches:
            break
        out += data[: batches[-1].position + batches[-1].size_in_bytes]
        offset = batches[-1].next_offset
    return bytes(out)


def control_offsets(log: Log) -> list[int]:
    return [b.base_offset for b in read_batches(raw(log)) if b.is_control]


def expected_transactions(log: Log) -> tuple[dict[int, int], list[AbortedTxn], int | None]:
    """What the log's batches alone say (a dumb model, one batch at a time in offset order):
    each producer's open transaction's first offset, the aborted entries with their last
    stable offsets, and the first unstable offset given the log's high watermark."""
    open_: dict[int, int] = {}
    completed: list[tuple[int, int]] = []
    aborted: list[AbortedTxn] = []
    for b in read_batches(raw(log)):
        pid = b.producer_id
        if pid < 0:
            continue
        if b.is_control:
            found = end_txn_marker_of(b) if b.records_count else None
            if found is None or pid not in open_:
                continue
            first = open_.pop(pid)
            completed.append((first, b.last_offset))
            if found.control_type is ABORT:
                lso = min(open_.values(), default=b.last_offset + 1)
                aborted.append(AbortedTxn(pid, first, b.last_offset, lso))
        elif b.is_transactional:
            open_.setdefault(pid, b.base_offset)
    hw = log.high_watermark
    unstable = [*open_.values(), *(first for first, last in completed if last >= hw)]
    first_unstable = max(min(unstable), log.log_start_offset) if unstable else None
    return open_, aborted, first_unstable


def transaction_mismatches(log: Log) -> list[str]:
    """How the log's transaction state differs from :func:`expected_transactions` (empty if
    it does not)."""
    open_, aborted, first_unstable = expected_transactions(log)
    problems = []
    state = {
        pid: e.current_txn_first_offset
        for pid, e in log.producer_state().items()
        if e.current_txn_first_offset >= 0
    }
    if state != open_:
        problems.append(f"open transactions {state} != {open_}")
    indexed = [entry for segment in log.segments() for entry in segment.txn_index]
    if indexed != aborted:
        problems.append(f".txnindex {indexed} != {aborted}")
    if log.first_unstable_offset() != first_unstable:
        problems.append(f"first unstable offset {log.first_unstable_offset()} != {first_unstable}")
    return problems
