"""One record of a v2 batch: the value object, and the decoder for a batch's record section.

Record layout (Kafka's ``DefaultRecord``; varints are zig-zag, see :mod:`.varint`)::

    Length          varint   bytes that follow, up to the end of the headers
    Attributes      int8     unused, written as 0, ignored on read
    TimestampDelta  varlong  timestamp - batch BaseTimestamp
    OffsetDelta     varint   offset - batch BaseOffset
    KeyLength       varint   -1 (any negative on read) for a null key
    Key             bytes
    ValueLength     varint   -1 (any negative on read) for a null value: a tombstone
    Value           bytes
    HeadersCount    varint   must not be negative
    Headers         [HeaderKeyLength varint (>= 0), HeaderKey UTF-8,
                     HeaderValueLength varint (-1 for null), HeaderValue bytes]

The decoder reads untrusted bytes: any inconsistency (a varint or field running past the
record, a Length that disagrees with the fields, a negative header count or header key length,
a header key that is not UTF-8, bytes left after the last record) raises
:class:`~odradek.errors.CorruptRecordError`, as Kafka raises ``InvalidRecordException`` (a
``CorruptRecordException``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from odradek.errors import CorruptRecordError
from odradek.records.varint import decode_varint, decode_varlong

if TYPE_CHECKING:
    from odradek.records.layout import RecordLayout

__all__ = [
    "NO_TIMESTAMP",
    "Header",
    "Record",
    "RecordColumns",
    "decode_columns",
    "decode_headers_of",
    "decode_records",
    "layout_columns",
    "Section",
]

NO_TIMESTAMP = -1
"""The timestamp stored for a record that has none (Kafka's ``RecordBatch.NO_TIMESTAMP``)."""

Header = tuple[str, bytes | None]
"""A record header: a UTF-8 key and a nullable value."""


@dataclass(frozen=True, slots=True, init=False)
class Record:
    """A record: what a producer sends and a consumer receives.

    ``headers`` is stored as a tuple of ``(key, value)`` pairs whatever sequence the constructor
    got; header values may be ``None``. ``timestamp`` and ``offset`` are ``None`` on records you
    build (``build_batch`` ignores ``offset`` and writes a ``None`` timestamp as
    ``NO_TIMESTAMP``); decoded records carry their absolute offset and timestamp, with a stored
    ``NO_TIMESTAMP`` decoded back to ``None``.
    """

    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...]
    timestamp: int | None
    offset: int | None

    def __init__(
        self,
        key: bytes | None,
        value: bytes | None,
        headers: Sequence[tuple[str, bytes | None]] = (),
        timestamp: int | None = None,
        offset: int | None = None,
    ) -> None:
        if type(headers) is not tuple or not all(type(h) is tuple for h in headers):
            headers = tuple((k, v) for k, v in headers)
        object.__setattr__(self, "key", key)
        object.__setattr__(self, "value", value)
        object.__setattr__(self, "headers", headers)
        object.__setattr__(self, "timestamp", timestamp)
        object.__setattr__(self, "offset", offset)


RecordColumns = tuple[
    list[int], list[int], list[bytes | None], list[bytes | None], list[tuple[Header, ...]]
]
"""What :func:`decode_columns` returns: offsets, timestamps, keys, values, headers."""

# Decoded records skip ``Record.__init__`` (its header normalisation and five
# ``object.__setattr__`` calls cost more than the rest of decoding a small record): the decoder
# builds headers as a tuple of tuples itself and sets the slots directly.
_new_record = object.__new__
_set_key, _set_value, _set_headers, _set_timestamp, _set_offset = (
    Record.__dict__[name].__set__ for name in ("key", "value", "headers", "timestamp", "offset")
)


def decode_records(
    data: bytes,
    count: int,
    base_offset: int,
    base_timestamp: int,
    log_append_time: int | None,
) -> list[Record]:
    """Decode exactly ``count`` records filling all of ``data`` (a batch's uncompressed record
    section).

    Offsets are ``base_offset + OffsetDelta``; timestamps ``base_timestamp + TimestampDelta``,
    or ``log_append_time`` for every record when it is not ``None`` (a LOG_APPEND_TIME batch),
    ``NO_TIMESTAMP`` becoming ``None``.

    Raises :class:`~odradek.errors.CorruptRecordError` as :func:`decode_columns`.
    """
    offsets, timestamps, keys, values, headers_of = decode_columns(
        data, count, base_offset, base_timestamp, log_append_time
    )
    records: list[Record] = []
    append = records.append
    for offset, timestamp, key, value, headers in zip(
        offsets, timestamps, keys, values, headers_of, strict=True
    ):
        record = _new_record(Record)
        _set_key(record, key)
        _set_value(record, value)
        _set_headers(record, headers)
        _set_timestamp(record, None if timestamp == NO_TIMESTAMP else timestamp)
        _set_offset(record, offset)
        append(record)
    return records


def decode_columns(
    data: bytes,
    count: int,
    base_offset: int,
    base_timestamp: int,
    log_append_time: int | None,
) -> RecordColumns:
    """Decode exactly ``count`` records filling all of ``data`` (a batch's uncompressed record
    section) into columns: offsets, timestamps (``NO_TIMESTAMP`` stays -1), keys, values and
    headers, one list each (the consumer builds its records from them with C-level loops, so
    a record costs one object).

    Offsets are ``base_offset + OffsetDelta``; timestamps ``base_timestamp + TimestampDelta``,
    or ``log_append_time`` for every record when it is not ``None`` (a LOG_APPEND_TIME batch),
    ``NO_TIMESTAMP`` becoming ``None``.

    Raises :class:`~odradek.errors.CorruptRecordError` if ``count`` is negative, if ``data``
    holds fewer records or leaves bytes over, or if any record is malformed.
    """
    if count < 0:
        raise CorruptRecordError(f"invalid record count {count}")
    if count >= _LAYOUT_MIN_RECORDS:
        columns = layout_columns([(data, count, base_offset, base_timestamp, log_append_time)])
        if columns is not None:
            return columns
    return _columns_by_record(data, count, base_offset, base_timestamp, log_append_time)


Section = tuple[bytes, int, int, int, int | None]
"""A batch's record section and what its records are relative to: (uncompressed bytes, record
count, base offset, base timestamp, the append time of a LOG_APPEND_TIME batch or ``None``) —
:func:`decode_columns`'s arguments."""

# odradek.records.layout needs numpy, which takes longer to import than the whole command line
# does: it is imported on the first batch big enough to use it.
_LAYOUT_MIN_RECORDS = 128  # odradek.records.layout.LAYOUT_MIN_RECORDS, checked by a test


def layout_columns(sections: Sequence[Section]) -> RecordColumns | None:
    """The columns of every record of ``sections``, one section after another, through
    :func:`~odradek.records.layout.record_layout`; ``None`` when they hold fewer than
    ``LAYOUT_MIN_RECORDS`` records or the layout does not vouch for them (decode each section
    with :func:`decode_columns` then: its record loop names the fault)."""
    counts = [section[1] for section in sections]
    total = sum(counts)
    if total < _LAYOUT_MIN_RECORDS or min(counts) <= 0:
        return None
    from odradek.records.layout import record_layout  # imported here: see above

    if len(sections) == 1:
        data = sections[0][0]
        boundaries: list[tuple[int, int]] = []
    else:
        data = b"".join(section[0] for section in sections)
        boundaries = []
        index = position = 0
        for section_data, count, *_ in sections[:-1]:
            index += count
            position += len(section_data)
            boundaries.append((index, position))
    layout = record_layout(data, total, boundaries)
    if layout is None:
        return None
    if len(sections) == 1:
        _, _, base_offset, base_timestamp, log_append_time = sections[0]
        offsets: list[int] = (layout.offset_delta + base_offset).tolist()
        if log_append_time is not None:
            timestamps = [log_append_time] * total
        else:
            timestamps = (layout.timestamp_delta + base_timestamp).tolist()
    else:
        import numpy as np  # imported with the layout

        bases = np.repeat(np.array([s[2] for s in sections], dtype=np.int64), counts)
        offsets = (layout.offset_delta + bases).tolist()
        stamps = np.repeat(np.array([s[3] for s in sections], dtype=np.int64), counts)
        stamps += layout.timestamp_delta
        for i, (_, count, _, _, log_append_time) in enumerate(sections):
            if log_append_time is not None:
                first = boundaries[i - 1][0] if i else 0
                stamps[first : first + count] = log_append_time
        timestamps = stamps.tolist()
    keys = _slices(data, layout.key_start, layout.key_size, total)
    values = _slices(data, layout.value_start, layout.value_size, total)
    try:
        headers_of = decode_headers_of(data, layout, range(total))
    except CorruptRecordError:
        return None
    return offsets, timestamps, keys, values, headers_of


def decode_headers_of(
    data: bytes, layout: RecordLayout, indexes: Sequence[int]
) -> list[tuple[Header, ...]]:
    """The headers of the records ``indexes`` (ascending) of a :func:`record_layout`, ``()``
    for a record with none.

    Raises :class:`~odradek.errors.CorruptRecordError` if a record's headers are malformed or
    do not end where the record does."""
    if not layout.header_count.any():
        return [()] * len(indexes)
    counts = layout.header_count.tolist()
    starts = layout.headers_start.tolist()
    ends = layout.record_end.tolist()
    out: list[tuple[Header, ...]] = []
    append = out.append
    index = -1
    try:
        for index in indexes:
            if not counts[index]:
                append(())
                continue
            headers, pos = _decode_headers(data, starts[index], ends[index], counts[index], index)
            if pos != ends[index]:
                raise CorruptRecordError(
                    f"record {index}: invalid record size: its headers end at byte {pos}, "
                    f"the record at byte {ends[index]}"
                )
            append(headers)
    except IndexError:
        raise CorruptRecordError(f"record {index}: headers are truncated") from None
    except UnicodeDecodeError as exc:
        raise CorruptRecordError(f"record {index}: header key is not UTF-8: {exc}") from None
    return out


def _slices(data: bytes, starts: Any, sizes: Any, count: int) -> list[bytes | None]:
    """``data[start:start + size]`` for each pair of the int64 arrays, ``None`` where the size
    is negative."""
    nulls = sizes < 0
    if nulls.all():
        return [None] * count
    begin = starts.tolist()
    end = (starts + sizes).tolist()
    if not nulls.any():
        return [data[b:e] for b, e in zip(begin, end, strict=True)]
    return [data[b:e] if b <= e else None for b, e in zip(begin, end, strict=True)]


def _columns_by_record(
    data: bytes, count: int, base_offset: int, base_timestamp: int, log_append_time: int | None
) -> RecordColumns:
    """:func:`decode_columns` one record at a time, checking every field: the reference, and
    the decoder of small batches and of sections the layout refuses."""
    offsets: list[int] = []
    timestamps: list[int] = []
    keys: list[bytes | None] = []
    values: list[bytes | None] = []
    headers_of: list[tuple[Header, ...]] = []
    end = len(data)
    pos = 0
    # Every varint below is read inline when it takes one byte (zig-zag values -64..63: a
    # record's length under 64 bytes, timestamp deltas, null keys, header counts) or two
    # (-8192..8191: offset deltas and value lengths of ordinary records), and by
    # decode_varint / decode_varlong otherwise. The five copies are deliberate (as in
    # storage.batch_filter and odradek.spark.arrow): a record decodes in about 1.4 µs, and a
    # helper call per field would add about 0.22 µs each. A read past the end of ``data`` is
    # an IndexError, reported below as a truncated record.
    try:
        for index in range(count):
            b = data[pos]
            if b < 0x80:
                length = (b >> 1) ^ -(b & 1)
                pos += 1
            elif (c := data[pos + 1]) < 0x80:
                u = (b & 0x7F) | (c << 7)
                length = (u >> 1) ^ -(u & 1)
                pos += 2
            else:
                length, pos = decode_varint(data, pos)
            start = pos
            stop = start + length
            if length < 0 or stop > end:
                raise CorruptRecordError(
                    f"record {index}: invalid record size {length} "
                    f"({end - start} bytes remain in the batch)"
                )
            pos += 1  # attributes: unused

            b = data[pos]
            if b < 0x80:
                ts_delta = (b >> 1) ^ -(b & 1)
                pos += 1
            elif (c := data[pos + 1]) < 0x80:
                u = (b & 0x7F) | (c << 7)
                ts_delta = (u >> 1) ^ -(u & 1)
                pos += 2
            else:
                ts_delta, pos = decode_varlong(data, pos)

            b = data[pos]
            if b < 0x80:
                offset_delta = (b >> 1) ^ -(b & 1)
                pos += 1
            elif (c := data[pos + 1]) < 0x80:
                u = (b & 0x7F) | (c << 7)
                offset_delta = (u >> 1) ^ -(u & 1)
                pos += 2
            elif (d := data[pos + 2]) < 0x80:  # deltas of 8192 and up: batches of 1 MiB
                u = (b & 0x7F) | ((c & 0x7F) << 7) | (d << 14)
                offset_delta = (u >> 1) ^ -(u & 1)
                pos += 3
            else:
                offset_delta, pos = decode_varint(data, pos)

            b = data[pos]
            if b < 0x80:
                size = (b >> 1) ^ -(b & 1)
                pos += 1
            elif (c := data[pos + 1]) < 0x80:
                u = (b & 0x7F) | (c << 7)
                size = (u >> 1) ^ -(u & 1)
                pos += 2
            else:
                size, pos = decode_varint(data, pos)
            if size >= 0:
                if pos + size > stop:
                    raise CorruptRecordError(f"record {index}: key overruns the record")
                key: bytes | None = data[pos : pos + size]
                pos += size
            else:
                key = None

            b = data[pos]
            if b < 0x80:
                size = (b >> 1) ^ -(b & 1)
                pos += 1
            elif (c := data[pos + 1]) < 0x80:
                u = (b & 0x7F) | (c << 7)
                size = (u >> 1) ^ -(u & 1)
                pos += 2
            else:
                size, pos = decode_varint(data, pos)
            if size >= 0:
                if pos + size > stop:
                    raise CorruptRecordError(f"record {index}: value overruns the record")
                value: bytes | None = data[pos : pos + size]
                pos += size
            else:
                value = None

            b = data[pos]
            if b < 0x80:
                num_headers = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                num_headers, pos = decode_varint(data, pos)
            headers: tuple[Header, ...] = ()
            if num_headers:
                if num_headers < 0:
                    raise CorruptRecordError(
                        f"record {index}: found invalid number of record headers {num_headers}"
                    )
                headers, pos = _decode_headers(data, pos, stop, num_headers, index)

            if pos != stop:
                raise CorruptRecordError(
                    f"record {index}: invalid record size: expected to read {length} bytes "
                    f"in record payload, but instead read {pos - start}"
                )
            if log_append_time is not None:
                timestamp = log_append_time
            else:
                timestamp = base_timestamp + ts_delta
            offsets.append(base_offset + offset_delta)
            timestamps.append(timestamp)
            keys.append(key)
            values.append(value)
            headers_of.append(headers)
    except IndexError:
        raise CorruptRecordError(
            f"premature end of records: {count} declared, record {len(offsets)} is truncated"
        ) from None
    except UnicodeDecodeError as exc:
        raise CorruptRecordError(f"record {len(offsets)}: header key is not UTF-8: {exc}") from None
    if pos != end:
        raise CorruptRecordError(
            f"incorrect declared batch size: {end - pos} bytes remain after {count} records"
        )
    return offsets, timestamps, keys, values, headers_of


def _decode_headers(
    data: bytes, pos: int, stop: int, count: int, index: int
) -> tuple[tuple[Header, ...], int]:
    """``count`` headers of record ``index`` from ``data[pos:stop]``; (headers, position after)."""
    headers: list[Header] = []
    for _ in range(count):
        size, pos = decode_varint(data, pos)
        if size < 0:
            raise CorruptRecordError(f"record {index}: invalid negative header key size {size}")
        if pos + size > stop:
            raise CorruptRecordError(f"record {index}: header key overruns the record")
        header_key = data[pos : pos + size].decode("utf-8")
        pos += size
        size, pos = decode_varint(data, pos)
        if size >= 0:
            if pos + size > stop:
                raise CorruptRecordError(f"record {index}: header value overruns the record")
            header_value: bytes | None = data[pos : pos + size]
            pos += size
        else:
            header_value = None
        headers.append((header_key, header_value))
    return tuple(headers), pos
