"""An open v2 record batch that records are appended to one at a time: Kafka's
``MemoryRecordsBuilder``.

:func:`~odradek.records.build_batch` encodes a finished list of records; the producer instead
encodes each record as it is sent, into the open batch of its partition, so that nothing of the
record but its bytes is kept and closing the batch is only the 61-byte header and the CRC
(plus compression of the records section, when a codec is set). Both write the same bytes for
the same records: the layout is :mod:`.batch`'s and :mod:`.record`'s, BaseTimestamp is the first
record's timestamp, each record's TimestampDelta is relative to it, OffsetDeltas are 0, 1, 2, …

The encoding of a record is a handful of precomputed varints (lengths and deltas below 8192
are a list index) joined once: this is the producer's per-record cost, so it is written for
speed rather than brevity.

Not thread-safe: the producer's accumulator lock guards an open batch.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

import crc32c

from odradek.records.batch import (
    ATTRIBUTES_OFFSET,
    CRC_OFFSET,
    HEADER_STRUCT,
    LOG_OVERHEAD,
    MAGIC_V2,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    PRODUCER_ID_OFFSET,
    RECORD_BATCH_OVERHEAD,
    TRANSACTIONAL_FLAG_MASK,
)
from odradek.records.compression import Compression, compress
from odradek.records.varint import INT32_MAX, encode_varint, encode_varlong

__all__ = ["RecordBatchBuilder", "encoded_headers", "with_producer_state"]

_UINT32 = struct.Struct(">I")
_PRODUCER_STATE = struct.Struct(">qhi")  # producer id, producer epoch, base sequence
# Zig-zag encodings of 0, 1, 2, … 8191 (the value doubled indexes the unsigned table).
_POSITIVE: list[bytes] = [encode_varint(n) for n in range(8192)]
_NULL = b"\x01"  # varint(-1): a null key or value
_NO_HEADERS = b"\x00"
_ATTRIBUTES = b"\x00"


def encoded_headers(headers: Sequence[tuple[str, bytes | None]]) -> bytes:
    """The headers section of a record: a count, then each key and value with its length.

    Raises ``TypeError`` for a key that is not a str, ``UnicodeEncodeError`` (a ``ValueError``)
    for a key with lone surrogates.
    """
    if not headers:
        return _NO_HEADERS
    out = bytearray(encode_varint(len(headers)))
    for header_key, header_value in headers:
        if type(header_key) is not str:
            raise TypeError(f"header key {header_key!r} is not a str")
        raw = header_key.encode("utf-8")
        out += encode_varint(len(raw))
        out += raw
        if header_value is None:
            out += _NULL
        else:
            out += encode_varint(len(header_value))
            out += header_value
    return bytes(out)


def with_producer_state(batch: bytes, producer_id: int, epoch: int, base_sequence: int) -> bytes:
    """``batch`` (one whole v2 batch) with its producer id, epoch and base sequence replaced
    and its CRC-32C computed again (the idempotent producer renumbers a batch it already built
    after an epoch bump)."""
    out = bytearray(batch)
    _PRODUCER_STATE.pack_into(out, PRODUCER_ID_OFFSET, producer_id, epoch, base_sequence)
    with memoryview(out) as view, view[ATTRIBUTES_OFFSET:] as covered:
        crc = crc32c.crc32c(covered)
    _UINT32.pack_into(out, CRC_OFFSET, crc)
    return bytes(out)


class RecordBatchBuilder:
    """One open batch: :meth:`append` records, then :meth:`close` once into the batch's bytes.

    ``size_in_bytes`` is the exact size the batch would have closed now without compression
    (header included). Raises nothing on append beyond what the arguments' types cause; the
    caller checks types and timestamp ranges (the producer does, in ``send``).
    """

    __slots__ = ("_body", "base_timestamp", "count", "max_timestamp", "size_in_bytes")

    def __init__(self) -> None:
        self._body: list[bytes] = []
        self.count = 0
        self.base_timestamp = 0
        self.max_timestamp = -1
        self.size_in_bytes = RECORD_BATCH_OVERHEAD

    def append(
        self, timestamp: int, key: bytes | None, value: bytes | None, headers: bytes = b"\x00"
    ) -> int:
        """Append one record (``headers`` already encoded by :func:`encoded_headers`); returns
        the bytes it added. ``timestamp`` is -1 (none) or a non-negative epoch-ms value."""
        count = self.count
        if count:
            delta = timestamp - self.base_timestamp
        else:
            self.base_timestamp = timestamp
            delta = 0
        if timestamp > self.max_timestamp:
            self.max_timestamp = timestamp
        positive = _POSITIVE
        ts_delta = positive[delta] if 0 <= delta < 8192 else encode_varlong(delta)
        offset_delta = positive[count] if count < 8192 else encode_varint(count)
        if key is None:
            key_size = _NULL
            key_len = 0
            key = b""
        else:
            key_len = len(key)
            key_size = positive[key_len] if key_len < 8192 else encode_varint(key_len)
        if value is None:
            value_size = _NULL
            value_len = 0
            value = b""
        else:
            value_len = len(value)
            value_size = positive[value_len] if value_len < 8192 else encode_varint(value_len)
        size = (
            1
            + len(ts_delta)
            + len(offset_delta)
            + len(key_size)
            + key_len
            + len(value_size)
            + value_len
            + len(headers)
        )
        size_varint = positive[size] if size < 8192 else encode_varint(size)
        self._body.extend(
            (
                size_varint,
                _ATTRIBUTES,
                ts_delta,
                offset_delta,
                key_size,
                key,
                value_size,
                value,
                headers,
            )
        )
        self.count = count + 1
        added = size + len(size_varint)
        self.size_in_bytes += added
        return added

    def append_many(
        self,
        timestamp: int,
        keys: Sequence[bytes | None] | None,
        values: Sequence[bytes | None],
        start: int,
        stop: int,
        max_size: int,
        room: int | None = None,
        per_record: int = 0,
    ) -> int:
        """Append ``values[start:stop]`` (with ``keys[i]``, or no keys) at one ``timestamp`` and
        no headers, while the batch stays within ``max_size`` bytes and, with ``room``, while
        the bytes added plus ``per_record`` for each record stay within it — but at least one
        record; returns the index after the last record appended. The bulk path's loop: the
        same bytes as :meth:`append` one at a time, without a call per record."""
        budget = room if room is not None else max_size
        count = self.count
        if not count:
            self.base_timestamp = timestamp
        if timestamp > self.max_timestamp:
            self.max_timestamp = timestamp
        delta = timestamp - self.base_timestamp
        ts_delta = _POSITIVE[delta] if 0 <= delta < 8192 else encode_varlong(delta)
        head_len = 1 + len(ts_delta)  # attributes and timestamp delta
        positive = _POSITIVE
        body = self._body
        size_in_bytes = self.size_in_bytes
        index = start
        null = _NULL
        while index < stop:
            value = values[index]
            key = keys[index] if keys is not None else None
            offset_delta = positive[count] if count < 8192 else encode_varint(count)
            if key is None:
                key_size = null
                key = b""
                key_len = 0
            else:
                key_len = len(key)
                key_size = positive[key_len] if key_len < 8192 else encode_varint(key_len)
            if value is None:
                value_size = null
                value = b""
                value_len = 0
            else:
                value_len = len(value)
                value_size = positive[value_len] if value_len < 8192 else encode_varint(value_len)
            size = (
                head_len
                + len(offset_delta)
                + len(key_size)
                + key_len
                + len(value_size)
                + value_len
                + 1
            )
            size_varint = positive[size] if size < 8192 else encode_varint(size)
            added = size + len(size_varint)
            if count and (size_in_bytes + added > max_size or added + per_record > budget):
                break
            budget -= added + per_record
            body.extend(
                (
                    size_varint,
                    _ATTRIBUTES,
                    ts_delta,
                    offset_delta,
                    key_size,
                    key,
                    value_size,
                    value,
                    _NO_HEADERS,
                )
            )
            size_in_bytes += added
            count += 1
            index += 1
        self.count = count
        self.size_in_bytes = size_in_bytes
        return index

    def release(self) -> None:
        """Drop the encoded records (after :meth:`close`; the caller keeps the bytes)."""
        self._body = []

    def close(
        self,
        *,
        compression: Compression = Compression.NONE,
        producer_id: int = NO_PRODUCER_ID,
        producer_epoch: int = NO_PRODUCER_EPOCH,
        base_sequence: int = -1,
        partition_leader_epoch: int = -1,
        is_transactional: bool = False,
    ) -> bytes:
        """The batch's bytes (base offset 0, CreateTime), CRC-32C included; with
        ``is_transactional`` the attributes' transactional flag is set.

        Raises ``ValueError`` for an empty batch or one over 2 GiB.
        """
        if not self.count:
            raise ValueError("a record batch needs at least one record")
        records = b"".join(self._body)
        if compression is not Compression.NONE:
            records = compress(compression, records)
        out = bytearray(RECORD_BATCH_OVERHEAD)
        out += records
        length = len(out) - LOG_OVERHEAD
        if length > INT32_MAX:
            raise ValueError(f"batch of {len(out)} bytes does not fit in an int32 length")
        HEADER_STRUCT.pack_into(
            out,
            0,
            0,  # base offset: the broker assigns it
            length,
            partition_leader_epoch,
            MAGIC_V2,
            0,  # CRC, computed below over the finished bytes
            int(compression) | (TRANSACTIONAL_FLAG_MASK if is_transactional else 0),
            self.count - 1,
            self.base_timestamp,
            self.max_timestamp,
            producer_id,
            producer_epoch,
            base_sequence,
            self.count,
        )
        with memoryview(out) as view, view[ATTRIBUTES_OFFSET:] as covered:
            crc = crc32c.crc32c(covered)
        _UINT32.pack_into(out, CRC_OFFSET, crc)
        return bytes(out)
