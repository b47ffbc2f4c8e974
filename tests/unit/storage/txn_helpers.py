"""Transactional batches and markers for the storage tests."""

from __future__ import annotations

from odradek.records import (
    ControlRecordType,
    EndTransactionMarker,
    Record,
    build_batch,
    build_end_txn_marker,
    read_batches,
)
from storage import Log

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
