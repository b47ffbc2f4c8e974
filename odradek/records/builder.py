"""Build one v2 record batch from records, as Kafka's ``MemoryRecordsBuilder`` writes it.

The batch is laid out as :mod:`.batch` describes. Offset deltas are 0, 1, 2, …; BaseTimestamp
is the first record's timestamp (a record without one is written as ``NO_TIMESTAMP``, -1) or,
when a delete horizon is given, the delete horizon, with attribute bit 6 set; each record's
TimestampDelta is its timestamp minus BaseTimestamp, so decoding ``BaseTimestamp + delta``
gives the record's timestamp back either way. MaxTimestamp is the largest record timestamp
(-1 if none has one). The records section is compressed as one stream when a codec is given
(Kafka's Java client always compresses when asked; it never falls back to none). The CRC-32C
covers bytes [21, end).

Pure and thread-safe.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable

import crc32c

from odradek.errors import UnsupportedCompressionTypeError
from odradek.records.appender import encoded_headers
from odradek.records.batch import (
    ATTRIBUTES_OFFSET,
    CONTROL_FLAG_MASK,
    CRC_OFFSET,
    DELETE_HORIZON_FLAG_MASK,
    HEADER_STRUCT,
    LOG_OVERHEAD,
    MAGIC_V2,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    RECORD_BATCH_OVERHEAD,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_FLAG_MASK,
)
from odradek.records.compression import Compression, compress
from odradek.records.record import NO_TIMESTAMP, Record
from odradek.records.timestamp_type import TimestampType
from odradek.records.varint import (
    INT32_MAX,
    INT32_MIN,
    INT64_MAX,
    INT64_MIN,
    encode_varint,
    encode_varlong,
)

__all__ = ["build_batch"]

INT16_MIN = -(1 << 15)
INT16_MAX = (1 << 15) - 1

_UINT32 = struct.Struct(">I")
_NULL = encode_varint(-1)
_ZERO_ATTRIBUTES = b"\x00"


def _as_compression(compression: Compression | str) -> Compression:
    if isinstance(compression, str):
        return Compression.from_name(compression)
    try:
        return Compression(compression)
    except ValueError:
        raise UnsupportedCompressionTypeError(f"unknown compression type {compression!r}") from None


def _as_timestamp_type(timestamp_type: TimestampType | str) -> TimestampType:
    if isinstance(timestamp_type, str):
        return TimestampType.from_name(timestamp_type)
    return TimestampType(timestamp_type)


def _check_range(name: str, value: int, low: int, high: int) -> None:
    if not low <= value <= high:
        raise ValueError(f"{name} {value} is out of range [{low}, {high}]")


def build_batch(
    records: Iterable[Record],
    *,
    base_offset: int = 0,
    compression: Compression | str = "none",
    timestamp_type: TimestampType | str = "create_time",
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    base_sequence: int = -1,
    partition_leader_epoch: int = -1,
    is_transactional: bool = False,
    is_control: bool = False,
    delete_horizon_ms: int | None = None,
) -> bytes:
    """The bytes of one v2 batch holding ``records`` (see the module docstring for the rules).

    ``Record.offset`` is ignored: the records get offsets ``base_offset``, ``base_offset + 1``,
    …. With ``timestamp_type`` LOG_APPEND_TIME pass the append time as every record's
    timestamp. ``compression`` and ``timestamp_type`` take the enums or their names.

    Raises ``ValueError`` for no records, a timestamp below -1, a negative delete horizon, a
    header field out of its integer range, a header key that cannot be encoded as UTF-8, a
    batch over 2 GiB, and the producer states Kafka's ``MemoryRecordsBuilder`` refuses
    (transactional without a producer id; a producer id with no epoch, or with no base
    sequence outside a control batch); ``TypeError`` for a key, value, header key or header
    value of the wrong type; :class:`~odradek.errors.UnsupportedCompressionTypeError` for an
    unknown codec.
    """
    codec = _as_compression(compression)
    ts_type = _as_timestamp_type(timestamp_type)
    _check_range("base offset", base_offset, INT64_MIN, INT64_MAX)
    _check_range("producer id", producer_id, INT64_MIN, INT64_MAX)
    _check_range("producer epoch", producer_epoch, INT16_MIN, INT16_MAX)
    _check_range("base sequence", base_sequence, INT32_MIN, INT32_MAX)
    _check_range("partition leader epoch", partition_leader_epoch, INT32_MIN, INT32_MAX)
    if is_transactional and producer_id == NO_PRODUCER_ID:
        raise ValueError("cannot write transactional records without a valid producer id")
    if producer_id != NO_PRODUCER_ID:
        if producer_epoch == NO_PRODUCER_EPOCH:
            raise ValueError("invalid negative producer epoch")
        if base_sequence < 0 and not is_control:
            raise ValueError("invalid negative sequence number used")
    if delete_horizon_ms is not None:
        _check_range("delete horizon", delete_horizon_ms, 0, INT64_MAX)

    out = bytearray(RECORD_BATCH_OVERHEAD)
    body = out if codec is Compression.NONE else bytearray()
    base_timestamp: int | None = delete_horizon_ms
    max_timestamp = NO_TIMESTAMP
    count = 0
    varint = encode_varint
    varlong = encode_varlong
    null = _NULL
    zero = _ZERO_ATTRIBUTES

    for record in records:
        timestamp = record.timestamp
        if timestamp is None:
            timestamp = NO_TIMESTAMP
        elif not NO_TIMESTAMP <= timestamp <= INT64_MAX:
            raise ValueError(f"invalid timestamp {timestamp}")
        if base_timestamp is None:
            base_timestamp = timestamp
        if timestamp > max_timestamp:
            max_timestamp = timestamp

        ts_delta = varlong(timestamp - base_timestamp)
        offset_delta = varint(count)
        key = record.key
        value = record.value
        if key is None:
            key_size = null
            key = b""
        else:
            key_size = varint(len(key))
        if value is None:
            value_size = null
            value = b""
        else:
            value_size = varint(len(value))
        headers = record.headers
        header_bytes = encoded_headers(headers) if headers else b"\x00"  # zero headers

        size = (
            1
            + len(ts_delta)
            + len(offset_delta)
            + len(key_size)
            + len(key)
            + len(value_size)
            + len(value)
            + len(header_bytes)
        )
        body += varint(size)
        body += zero
        body += ts_delta
        body += offset_delta
        body += key_size
        body += key
        body += value_size
        body += value
        body += header_bytes
        count += 1

    if count == 0 or base_timestamp is None:
        raise ValueError("a record batch needs at least one record")

    if body is not out:
        out += compress(codec, bytes(body))
    length = len(out) - LOG_OVERHEAD
    if length > INT32_MAX:
        raise ValueError(f"batch of {len(out)} bytes does not fit in an int32 length")

    attributes = int(codec)
    if ts_type is TimestampType.LOG_APPEND_TIME:
        attributes |= TIMESTAMP_TYPE_MASK
    if is_transactional:
        attributes |= TRANSACTIONAL_FLAG_MASK
    if is_control:
        attributes |= CONTROL_FLAG_MASK
    if delete_horizon_ms is not None:
        attributes |= DELETE_HORIZON_FLAG_MASK

    HEADER_STRUCT.pack_into(
        out,
        0,
        base_offset,
        length,
        partition_leader_epoch,
        MAGIC_V2,
        0,  # CRC, computed below over the finished bytes
        attributes,
        count - 1,
        base_timestamp,
        max_timestamp,
        producer_id,
        producer_epoch,
        base_sequence,
        count,
    )
    with memoryview(out) as view, view[ATTRIBUTES_OFFSET:] as covered:
        crc = crc32c.crc32c(covered)
    _UINT32.pack_into(out, CRC_OFFSET, crc)
    return bytes(out)
