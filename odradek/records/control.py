"""Control batches: the transaction markers a coordinator writes (Kafka's ``ControlRecordType``,
``EndTransactionMarker`` and ``MemoryRecords.withEndTransactionMarker``).

A control batch has attribute bits 4 (transactional) and 5 (control) set, the producer id and
epoch of the transaction it ends, no base sequence (-1), and exactly one record::

    key   = version int16 (0) | type int16     (ControlRecordType: 0 ABORT, 1 COMMIT)
    value = version int16 (0) | coordinatorEpoch int32          (EndTransactionMarker)

all big-endian. Consumers never return control records; brokers read them to end a producer's
ongoing transaction. Readers accept a newer key or value version as long as the fields above
are there (Kafka reads the first fields of any version and ignores the rest).

Pure and thread-safe.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from enum import IntEnum

from odradek.errors import CorruptRecordError
from odradek.records.batch import NO_PARTITION_LEADER_EPOCH, RecordBatch
from odradek.records.builder import build_batch
from odradek.records.record import Record

__all__ = [
    "CONTROL_KEY_VERSION",
    "END_TXN_MARKER_VERSION",
    "ControlRecordType",
    "EndTransactionMarker",
    "build_end_txn_marker",
    "control_record_key",
    "control_record_type",
    "end_txn_marker_of",
    "end_txn_marker_value",
    "parse_end_txn_marker",
]

CONTROL_KEY_VERSION = 0
END_TXN_MARKER_VERSION = 0
_KEY = struct.Struct(">hh")
_MARKER = struct.Struct(">hi")


class ControlRecordType(IntEnum):
    """The type in a control record's key (Kafka's ``ControlRecordType``); ``UNKNOWN`` for a
    type this version does not know (a newer broker's), which readers skip."""

    UNKNOWN = -1
    ABORT = 0
    COMMIT = 1


@dataclass(frozen=True, slots=True)
class EndTransactionMarker:
    """A COMMIT or ABORT marker and the epoch of the coordinator that wrote it."""

    control_type: ControlRecordType
    coordinator_epoch: int

    def __post_init__(self) -> None:
        if self.control_type not in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
            raise ValueError(f"{self.control_type!r} is not a transaction marker type")


def control_record_key(control_type: ControlRecordType) -> bytes:
    """The 4-byte key of a control record of ``control_type``."""
    return _KEY.pack(CONTROL_KEY_VERSION, int(control_type))


def end_txn_marker_value(coordinator_epoch: int) -> bytes:
    """The 6-byte value of an end-transaction marker. Raises ``struct.error`` for an epoch
    that is not an int32."""
    return _MARKER.pack(END_TXN_MARKER_VERSION, coordinator_epoch)


def control_record_type(key: bytes | None) -> ControlRecordType:
    """The type a control record's key names (``UNKNOWN`` for a type not listed).

    Raises :class:`~odradek.errors.CorruptRecordError` for a missing key or one shorter than
    4 bytes (Kafka's ``InvalidRecordException``)."""
    if key is None or len(key) < _KEY.size:
        size = "no" if key is None else f"a {len(key)}-byte"
        raise CorruptRecordError(f"a control record has {size} key; it needs 4 bytes")
    _version, type_id = _KEY.unpack_from(key)
    try:
        return ControlRecordType(type_id)
    except ValueError:
        return ControlRecordType.UNKNOWN


def parse_end_txn_marker(key: bytes | None, value: bytes | None) -> EndTransactionMarker:
    """The marker a control record's key and value hold.

    Raises :class:`~odradek.errors.CorruptRecordError` if the key is not a COMMIT or ABORT
    key, or the value is missing or shorter than 6 bytes."""
    control_type = control_record_type(key)
    if control_type is ControlRecordType.UNKNOWN:
        raise CorruptRecordError("the control record is not an end-transaction marker")
    if value is None or len(value) < _MARKER.size:
        size = "no" if value is None else f"a {len(value)}-byte"
        raise CorruptRecordError(f"an end-transaction marker has {size} value; it needs 6 bytes")
    _version, coordinator_epoch = _MARKER.unpack_from(value)
    return EndTransactionMarker(control_type, coordinator_epoch)


def end_txn_marker_of(batch: RecordBatch) -> EndTransactionMarker | None:
    """The marker in a control ``batch``, or ``None`` for a control batch of another type
    (one a newer broker wrote). Raises :class:`~odradek.errors.CorruptRecordError` for a batch
    that is not a control batch, has no record, or whose record is malformed."""
    if not batch.is_control:
        raise CorruptRecordError(f"batch at offset {batch.base_offset} is not a control batch")
    records = batch.records()
    if not records:
        raise CorruptRecordError(f"control batch at offset {batch.base_offset} has no record")
    record = records[0]
    if control_record_type(record.key) is ControlRecordType.UNKNOWN:
        return None
    return parse_end_txn_marker(record.key, record.value)


def build_end_txn_marker(
    marker: EndTransactionMarker,
    *,
    producer_id: int,
    producer_epoch: int,
    timestamp: int,
    base_offset: int = 0,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
) -> bytes:
    """The bytes of a control batch holding ``marker`` for the transaction of ``producer_id``
    at ``producer_epoch``, stamped ``timestamp`` (Kafka's
    ``MemoryRecords.withEndTransactionMarker``): transactional, control, no sequence.

    Raises ``ValueError`` for a producer id below 0 or a field out of its integer range."""
    if producer_id < 0:
        raise ValueError(f"a transaction marker needs a producer id, not {producer_id}")
    record = Record(
        key=control_record_key(marker.control_type),
        value=end_txn_marker_value(marker.coordinator_epoch),
        timestamp=timestamp,
    )
    return build_batch(
        [record],
        base_offset=base_offset,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=-1,
        partition_leader_epoch=partition_leader_epoch,
        is_transactional=True,
        is_control=True,
    )
