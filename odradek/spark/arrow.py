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

from bisect import bisect_left
from typing import Any

import numpy as np
import pyarrow as pa  # type: ignore[import-untyped]
import pyarrow.compute as pc  # type: ignore[import-untyped]

from odradek.errors import CorruptRecordError
from odradek.records import RecordBatch
from odradek.records.batch import RECORD_BATCH_OVERHEAD
from odradek.records.compression import Compression, decompress
from odradek.records.layout import LAYOUT_MIN_RECORDS, RecordLayout, record_layout
from odradek.records.record import decode_columns, decode_headers_of

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
        # One entry per batch added: its keys, values, offsets, timestamps (ms), timestamp
        # types and (with headers) header lists, each already an Arrow array.
        self._pieces: list[list[Any]] = []
        self._rows = 0

    def __len__(self) -> int:
        return self._rows

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
        data = bytes(batch.buffer()[RECORD_BATCH_OVERHEAD:])
        codec = batch.compression
        if codec is not Compression.NONE:
            data = decompress(codec, data)
        layout = record_layout(data, count) if count >= LAYOUT_MIN_RECORDS else None
        try:
            if layout is not None:
                piece = self._piece_from_layout(data, layout, batch, start, end)
            else:
                piece = self._piece_from_columns(data, count, batch, start, end)
        except CorruptRecordError as exc:
            raise CorruptRecordError(
                f"{self.topic}-{self.partition}: batch at offset {batch.base_offset} does not "
                f"decode: {exc.message}"
            ) from None
        if piece is None:
            return 0
        if batch.timestamp_type.value == 1:  # LOG_APPEND_TIME: the batch's time for all
            piece[3] = pa.array(np.full(len(piece[2]), batch.max_timestamp, dtype=np.int64))
        piece.insert(4, pa.array(np.full(len(piece[2]), batch.timestamp_type.value, np.int32)))
        self._pieces.append(piece)
        added = len(piece[2])
        self._rows += added
        return added

    def _piece_from_layout(
        self, data: bytes, layout: RecordLayout, batch: RecordBatch, start: int, end: int
    ) -> list[Any] | None:
        """Keys, values, offsets, timestamps (and headers) of the batch's records in range,
        cut from ``data`` by Arrow: no Python object per record."""
        offsets = layout.offset_delta + batch.base_offset
        keep = (offsets >= start) & (offsets < end)
        rows: Any = None if bool(keep.all()) else keep.nonzero()[0]
        if rows is not None and len(rows) == 0:
            return None
        buffer = pa.py_buffer(data)
        piece = [
            _cut(buffer, layout.key_start, layout.key_size, rows),
            _cut(buffer, layout.value_start, layout.value_size, rows),
            pa.array(offsets if rows is None else offsets[rows]),
            pa.array(
                layout.timestamp_delta + batch.base_timestamp
                if rows is None
                else layout.timestamp_delta[rows] + batch.base_timestamp
            ),
        ]
        if self.include_headers:
            indexes = range(len(offsets)) if rows is None else rows.tolist()
            headers = decode_headers_of(data, layout, indexes)
            piece.append(pa.array([h or None for h in headers], type=_HEADERS_TYPE))
        return piece

    def _piece_from_columns(
        self, data: bytes, count: int, batch: RecordBatch, start: int, end: int
    ) -> list[Any] | None:
        """As :meth:`_piece_from_layout` for small batches, through the record-by-record
        decoder (which also names the fault of a corrupt one)."""
        offsets, timestamps, keys, values, headers = decode_columns(
            data, count, batch.base_offset, batch.base_timestamp, None
        )
        lo = bisect_left(offsets, start)
        hi = bisect_left(offsets, end)
        if lo >= hi:
            return None
        piece = [
            pa.array(keys[lo:hi], type=pa.binary()),
            pa.array(values[lo:hi], type=pa.binary()),
            pa.array(offsets[lo:hi], type=pa.int64()),
            pa.array(timestamps[lo:hi], type=pa.int64()),
        ]
        if self.include_headers:
            piece.append(pa.array([h or None for h in headers[lo:hi]], type=_HEADERS_TYPE))
        return piece

    def build(self) -> Any:
        """The collected records as one ``pyarrow.RecordBatch``; the builder starts empty
        again."""
        n = self._rows
        width = len(self._topic_bytes)
        topic_offsets = np.arange(0, (n + 1) * width, width, dtype=np.int32)[: n + 1]
        topics = pa.StringArray.from_buffers(
            n, pa.py_buffer(topic_offsets), pa.py_buffer(self._topic_bytes * n)
        )

        def column(i: int, kind: Any) -> Any:
            arrays = [piece[i] for piece in self._pieces]
            return pa.concat_arrays(arrays) if arrays else pa.array([], type=kind)

        millis = column(3, pa.int64())
        columns = [
            column(0, pa.binary()),
            column(1, pa.binary()),
            topics,
            pa.array(np.full(n, self.partition, dtype=np.int32)),
            column(2, pa.int64()),
            pc.multiply(millis, 1000).view(_TIMESTAMP_TYPE),
            column(4, pa.int32()),
        ]
        if self.include_headers:
            columns.append(column(5, _HEADERS_TYPE))
        self._reset()
        return pa.RecordBatch.from_arrays(columns, schema=self._schema)


def _cut(buffer: Any, starts: Any, sizes: Any, rows: Any) -> Any:
    """A binary array of ``buffer[start:start + size]`` for each record (of ``rows`` only, when
    not ``None``), null where the size is negative.

    The fields lie in ``buffer`` in order with gaps between them, so one array over the buffer
    whose elements alternate field, gap, field, ... costs no copy; taking its even elements
    copies just the fields, in C++."""
    n = len(starts)
    nulls = sizes < 0
    if rows is not None:
        count = len(rows)
        if bool(nulls[rows].all()):
            return pa.nulls(count, type=pa.binary())
    elif bool(nulls.all()):
        return pa.nulls(n, type=pa.binary())
    bounds = np.empty(2 * n, dtype=np.int32)
    bounds[0::2] = starts
    bounds[1::2] = starts + np.maximum(sizes, 0)
    alternating = pa.BinaryArray.from_buffers(
        pa.binary(), 2 * n - 1, [None, pa.py_buffer(bounds), buffer]
    )
    picked = np.arange(0, 2 * n, 2, dtype=np.int64) if rows is None else rows * 2
    fields = alternating.take(pa.array(picked))
    field_nulls = nulls if rows is None else nulls[rows]
    if bool(field_nulls.any()):
        fields = pc.if_else(pa.array(~field_nulls), fields, pa.scalar(None, type=pa.binary()))
    return fields
