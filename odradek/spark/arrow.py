"""Record batches (the bytes of a fetch answer) decoded straight into Arrow columns.

Spark's Python data sources move ``pyarrow.RecordBatch``es to the JVM about three times faster
than rows, and most of a reader's time is decoding, so this module skips the SDK's record
objects: :class:`ArrowBatchBuilder` walks each record's varints once and appends the key and
value slices, offset and timestamp to plain lists, and builds the constant columns (topic,
partition, timestamp type) from buffers. Record layout: :mod:`odradek.records.record`.

The schema is Spark's Kafka source's, with Arrow types Spark maps exactly::

    key binary, value binary, topic string, partition int32, offset int64,
    timestamp timestamp[us, tz=UTC], timestampType int32,
    [headers list<struct<key: string, value: binary>>]   only with includeHeaders

Every field is nullable, as in Spark's ``KafkaRecordToRowConverter``; ``headers`` is null for a
record without headers (Spark's choice too).

Not thread-safe: one builder per reading task.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa  # type: ignore[import-untyped]
import pyarrow.compute as pc  # type: ignore[import-untyped]

from odradek.errors import CorruptRecordError
from odradek.records import RecordBatch
from odradek.records.compression import Compression, decompress
from odradek.records.varint import decode_varint, decode_varlong

__all__ = ["SPARK_DDL", "ArrowBatchBuilder", "arrow_schema", "spark_ddl"]

_HEADERS_TYPE = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))
_TIMESTAMP_TYPE = pa.timestamp("us", tz="UTC")

SPARK_DDL = (
    "key binary, value binary, topic string, partition int, offset long, "
    "timestamp timestamp, timestampType int"
)
"""The read schema without headers, as a Spark DDL string."""


def spark_ddl(include_headers: bool) -> str:
    """The read schema as a Spark DDL string."""
    if include_headers:
        return SPARK_DDL + ", headers array<struct<key: string, value: binary>>"
    return SPARK_DDL


def arrow_schema(include_headers: bool) -> Any:
    """The Arrow schema of the batches a read yields (a ``pyarrow.Schema``)."""
    fields = [
        ("key", pa.binary()),
        ("value", pa.binary()),
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("offset", pa.int64()),
        ("timestamp", _TIMESTAMP_TYPE),
        ("timestampType", pa.int32()),
    ]
    if include_headers:
        fields.append(("headers", _HEADERS_TYPE))
    return pa.schema(fields)


class ArrowBatchBuilder:
    """Collects the records of one topic-partition and hands them out as Arrow batches."""

    def __init__(self, topic: str, partition: int, include_headers: bool) -> None:
        self.topic = topic
        self.partition = partition
        self.include_headers = include_headers
        self._schema = arrow_schema(include_headers)
        self._topic_bytes = topic.encode("utf-8")
        self._reset()

    def _reset(self) -> None:
        self.keys: list[bytes | None] = []
        self.values: list[bytes | None] = []
        self.offsets: list[int] = []
        self.timestamps: list[int] = []
        self.timestamp_types: list[int] = []
        self.headers: list[list[tuple[str, bytes | None]] | None] = []

    def __len__(self) -> int:
        return len(self.offsets)

    def add(self, batch: RecordBatch, start: int, end: int) -> int:
        """Append the records of ``batch`` with ``start <= offset < end``; the number added.

        Control batches add nothing. Does not check the CRC (call ``batch.validate()`` first).
        Raises :class:`~odradek.errors.CorruptRecordError` for records that do not decode.
        """
        if batch.is_control or batch.last_offset < start or batch.base_offset >= end:
            return 0
        count = batch.records_count
        if count <= 0:
            return 0
        view = batch.buffer()
        data = bytes(view[61:])
        codec = batch.compression
        if codec is not Compression.NONE:
            data = decompress(codec, data)
        log_append_time = batch.max_timestamp if batch.timestamp_type.value == 1 else None
        before = len(self.offsets)
        try:
            self._decode(data, count, batch.base_offset, batch.base_timestamp, start, end)
        except (IndexError, UnicodeDecodeError) as exc:
            raise CorruptRecordError(
                f"{self.topic}-{self.partition}: batch at offset {batch.base_offset} does not "
                f"decode: {exc}"
            ) from None
        added = len(self.offsets) - before
        if log_append_time is not None:
            self.timestamps[before:] = [log_append_time] * added
        self.timestamp_types.extend([batch.timestamp_type.value] * added)
        return added

    def _decode(
        self, data: bytes, count: int, base_offset: int, base_ts: int, start: int, end: int
    ) -> None:
        # The hot loop: locals for every attribute, and each varint's one- and two-byte cases
        # inline (zig-zag values below 64 take one byte, below 8192 two: record lengths,
        # key/value sizes and deltas of ordinary batches), a call only for longer ones.
        keys = self.keys
        values = self.values
        offsets = self.offsets
        timestamps = self.timestamps
        headers = self.headers if self.include_headers else None
        dv = decode_varint
        pos = 0
        for _ in range(count):
            b = data[pos]
            if b < 0x80:
                length = (b >> 1) ^ -(b & 1)
                pos += 1
            elif data[pos + 1] < 0x80:
                u = (b & 0x7F) | (data[pos + 1] << 7)
                length = (u >> 1) ^ -(u & 1)
                pos += 2
            else:
                length, pos = dv(data, pos)
            stop = pos + length
            pos += 1  # attributes
            b = data[pos]
            if b < 0x80:
                ts_delta = (b >> 1) ^ -(b & 1)
                pos += 1
            elif data[pos + 1] < 0x80:
                u = (b & 0x7F) | (data[pos + 1] << 7)
                ts_delta = (u >> 1) ^ -(u & 1)
                pos += 2
            else:
                ts_delta, pos = decode_varlong(data, pos)
            b = data[pos]
            if b < 0x80:
                offset_delta = (b >> 1) ^ -(b & 1)
                pos += 1
            elif data[pos + 1] < 0x80:
                u = (b & 0x7F) | (data[pos + 1] << 7)
                offset_delta = (u >> 1) ^ -(u & 1)
                pos += 2
            else:
                offset_delta, pos = dv(data, pos)
            offset = base_offset + offset_delta
            if offset < start or offset >= end:
                pos = stop
                continue
            b = data[pos]
            if b < 0x80:
                size = (b >> 1) ^ -(b & 1)
                pos += 1
            elif data[pos + 1] < 0x80:
                u = (b & 0x7F) | (data[pos + 1] << 7)
                size = (u >> 1) ^ -(u & 1)
                pos += 2
            else:
                size, pos = dv(data, pos)
            if size >= 0:
                keys.append(data[pos : pos + size])
                pos += size
            else:
                keys.append(None)
            b = data[pos]
            if b < 0x80:
                size = (b >> 1) ^ -(b & 1)
                pos += 1
            elif data[pos + 1] < 0x80:
                u = (b & 0x7F) | (data[pos + 1] << 7)
                size = (u >> 1) ^ -(u & 1)
                pos += 2
            else:
                size, pos = dv(data, pos)
            if size >= 0:
                values.append(data[pos : pos + size])
                pos += size
            else:
                values.append(None)
            offsets.append(offset)
            timestamps.append(base_ts + ts_delta)
            if headers is not None:
                num_headers, pos = dv(data, pos)
                if num_headers <= 0:
                    headers.append(None)
                else:
                    record_headers: list[tuple[str, bytes | None]] = []
                    for _ in range(num_headers):
                        size, pos = dv(data, pos)
                        header_key = data[pos : pos + size].decode("utf-8")
                        pos += size
                        size, pos = dv(data, pos)
                        if size >= 0:
                            record_headers.append((header_key, data[pos : pos + size]))
                            pos += size
                        else:
                            record_headers.append((header_key, None))
                    headers.append(record_headers)
            if pos > stop:
                raise CorruptRecordError(f"record at offset {offset} overruns its length")
            pos = stop
        if pos != len(data):
            raise CorruptRecordError(
                f"batch at offset {base_offset}: {len(data) - pos} bytes remain after "
                f"{count} records"
            )

    def build(self) -> Any:
        """The collected records as one ``pyarrow.RecordBatch``; the builder starts empty
        again."""
        n = len(self.offsets)
        width = len(self._topic_bytes)
        topic_offsets = np.arange(0, (n + 1) * width, width, dtype=np.int32)[: n + 1]
        topics = pa.StringArray.from_buffers(
            n, pa.py_buffer(topic_offsets), pa.py_buffer(self._topic_bytes * n)
        )
        millis = pa.array(self.timestamps, type=pa.int64())
        columns = [
            pa.array(self.keys, type=pa.binary()),
            pa.array(self.values, type=pa.binary()),
            topics,
            pa.array(np.full(n, self.partition, dtype=np.int32)),
            pa.array(self.offsets, type=pa.int64()),
            pc.multiply(millis, 1000).view(_TIMESTAMP_TYPE),
            pa.array(self.timestamp_types, type=pa.int32()),
        ]
        if self.include_headers:
            columns.append(pa.array(self.headers, type=_HEADERS_TYPE))
        self._reset()
        return pa.RecordBatch.from_arrays(columns, schema=self._schema)
