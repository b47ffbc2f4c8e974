"""Record batch v2 (magic 2): a zero-copy view, the file-scan iterator and in-place rewrites.

Byte layout (Kafka's ``DefaultRecordBatch``; all integers big-endian)::

    offset  size  field                 notes
    ------  ----  --------------------  ------------------------------------------------------
         0     8  BaseOffset            absolute offset of the first record
         8     4  Length                batch size in bytes minus 12 (LOG_OVERHEAD)
        12     4  PartitionLeaderEpoch  set by the leader on append; NOT covered by the CRC
        16     1  Magic                 2
        17     4  CRC                   uint32 CRC-32C (Castagnoli) of bytes [21, end of batch)
        21     2  Attributes            bits 0-2 compression (0 none, 1 gzip, 2 snappy, 3 lz4,
                                        4 zstd); bit 3 timestamp type (1 = LogAppendTime);
                                        bit 4 transactional; bit 5 control; bit 6 delete
                                        horizon set; bits 7-15 unused (0)
        23     4  LastOffsetDelta       last offset - BaseOffset
        27     8  BaseTimestamp         first record's timestamp, or the delete horizon when
                                        bit 6 is set (record timestamp deltas are relative to it)
        35     8  MaxTimestamp          largest record timestamp, or the log append time
        43     8  ProducerId            -1 if none
        51     2  ProducerEpoch         -1 if none
        53     4  BaseSequence          -1 if none
        57     4  RecordsCount          number of records
        61     -  Records               the records (:mod:`.record`), compressed as one stream
                                        when bits 0-2 are not 0 (:mod:`.compression`)

Invariants of a valid batch: Magic is 2, ``Length + 12 >= 61``, the whole batch lies inside
the buffer, and the stored CRC equals the CRC-32C of bytes [21, end). BaseOffset and
PartitionLeaderEpoch lie outside the CRC so that the broker can assign them in place.

:class:`RecordBatch` never copies the batch: it keeps a reference to the buffer (``bytes``,
``bytearray``, ``memoryview`` or ``mmap``) and parses only the 61-byte header. A view is not
thread-safe against concurrent writers of the same buffer; reading from several threads is.
"""

from __future__ import annotations

import mmap
import struct
from collections.abc import Callable, Iterator, Sequence
from typing import NamedTuple, TypeAlias, TypeVar

import crc32c

from odradek.errors import CorruptRecordError
from odradek.records.compression import Compression, decompress
from odradek.records.record import (
    NO_TIMESTAMP,
    Header,
    Record,
    RecordColumns,
    Section,
    decode_columns,
    decode_records,
    layout_columns,
)
from odradek.records.timestamp_type import TimestampType

_T = TypeVar("_T")

__all__ = [
    "Buffer",
    "columns_of",
    "MAGIC_V2",
    "LOG_OVERHEAD",
    "RECORD_BATCH_OVERHEAD",
    "HEADER_SIZE_UP_TO_MAGIC",
    "RECORD_OVERHEAD_V0",
    "NO_TIMESTAMP",
    "NO_PRODUCER_ID",
    "NO_PRODUCER_EPOCH",
    "NO_SEQUENCE",
    "NO_PARTITION_LEADER_EPOCH",
    "BASE_OFFSET_OFFSET",
    "LENGTH_OFFSET",
    "PARTITION_LEADER_EPOCH_OFFSET",
    "MAGIC_OFFSET",
    "CRC_OFFSET",
    "ATTRIBUTES_OFFSET",
    "LAST_OFFSET_DELTA_OFFSET",
    "BASE_TIMESTAMP_OFFSET",
    "MAX_TIMESTAMP_OFFSET",
    "PRODUCER_ID_OFFSET",
    "PRODUCER_EPOCH_OFFSET",
    "BASE_SEQUENCE_OFFSET",
    "RECORDS_COUNT_OFFSET",
    "COMPRESSION_CODEC_MASK",
    "TIMESTAMP_TYPE_MASK",
    "TRANSACTIONAL_FLAG_MASK",
    "CONTROL_FLAG_MASK",
    "DELETE_HORIZON_FLAG_MASK",
    "HEADER_STRUCT",
    "RecordBatch",
    "read_batches",
    "batch_size_at",
    "set_base_offset",
    "set_partition_leader_epoch",
    "set_log_append_time",
]

Buffer: TypeAlias = bytes | bytearray | memoryview | mmap.mmap
"""What a batch can live in: any byte buffer, read-only ones included."""

MAGIC_V2 = 2
LOG_OVERHEAD = 12
"""BaseOffset + Length: the bytes of a batch that its Length field does not count."""
RECORD_BATCH_OVERHEAD = 61
"""The fixed header; a batch with no records is this long."""
HEADER_SIZE_UP_TO_MAGIC = 17
"""Bytes needed to read a batch's offset, length and magic (Kafka's file scan needs more)."""
RECORD_OVERHEAD_V0 = 14
"""The smallest Length Kafka's file scan accepts (a legacy v0 message's overhead)."""
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_PARTITION_LEADER_EPOCH = -1

BASE_OFFSET_OFFSET = 0
LENGTH_OFFSET = 8
PARTITION_LEADER_EPOCH_OFFSET = 12
MAGIC_OFFSET = 16
CRC_OFFSET = 17
ATTRIBUTES_OFFSET = 21
LAST_OFFSET_DELTA_OFFSET = 23
BASE_TIMESTAMP_OFFSET = 27
MAX_TIMESTAMP_OFFSET = 35
PRODUCER_ID_OFFSET = 43
PRODUCER_EPOCH_OFFSET = 51
BASE_SEQUENCE_OFFSET = 53
RECORDS_COUNT_OFFSET = 57

COMPRESSION_CODEC_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_FLAG_MASK = 0x10
CONTROL_FLAG_MASK = 0x20
DELETE_HORIZON_FLAG_MASK = 0x40

HEADER_STRUCT = struct.Struct(">qiibIhiqqqhii")
"""The whole 61-byte header, BaseOffset to RecordsCount, in one unpack."""
assert HEADER_STRUCT.size == RECORD_BATCH_OVERHEAD

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_UINT32 = struct.Struct(">I")
_INT64 = struct.Struct(">q")

# Indexes into the unpacked header tuple.
_H_BASE_OFFSET = 0
_H_LENGTH = 1
_H_PARTITION_LEADER_EPOCH = 2
_H_MAGIC = 3
_H_CRC = 4
_H_ATTRIBUTES = 5
_H_LAST_OFFSET_DELTA = 6
_H_BASE_TIMESTAMP = 7
_H_MAX_TIMESTAMP = 8
_H_PRODUCER_ID = 9
_H_PRODUCER_EPOCH = 10
_H_BASE_SEQUENCE = 11
_H_RECORDS_COUNT = 12


def _buffer_len(buf: Buffer) -> int:
    return buf.nbytes if isinstance(buf, memoryview) else len(buf)


def _byte_view(buf: Buffer) -> memoryview:
    view = memoryview(buf)
    if view.format == "B" and view.ndim == 1:
        return view
    return view.cast("B")


def _crc_of(buf: Buffer, start: int, stop: int) -> int:
    # The view is released at once so that a bytearray can be resized again afterwards.
    with _byte_view(buf)[start:stop] as part:
        return int(crc32c.crc32c(part))


def _copy(buf: Buffer, start: int, stop: int) -> bytes:
    if isinstance(buf, bytes):
        return buf[start:stop]
    with _byte_view(buf)[start:stop] as part:
        return part.tobytes()


class RecordBatch:
    """A read-only view of the v2 batch starting at ``position`` in ``buf``.

    The constructor reads only the 61-byte header, with one ``struct`` unpack, and checks
    nothing else: call :meth:`validate` (or :meth:`is_valid`) before trusting the rest.
    ``RecordBatch(buf, position)`` raises ``ValueError`` for a negative position and
    :class:`~odradek.errors.CorruptRecordError` if fewer than 61 bytes follow ``position``.
    """

    __slots__ = ("_buf", "_header", "_position")

    def __init__(self, buf: Buffer, position: int = 0) -> None:
        if position < 0:
            raise ValueError(f"negative batch position {position}")
        try:
            self._header: tuple[int, ...] = HEADER_STRUCT.unpack_from(buf, position)
        except struct.error:
            raise CorruptRecordError(
                f"batch at position {position}: fewer than {RECORD_BATCH_OVERHEAD} header "
                f"bytes in a buffer of {_buffer_len(buf)}"
            ) from None
        self._buf = buf
        self._position = position

    def __repr__(self) -> str:
        h = self._header
        return (
            f"RecordBatch(position={self._position}, offsets=[{h[_H_BASE_OFFSET]}, "
            f"{self.last_offset}], size={self.size_in_bytes}, magic={h[_H_MAGIC]}, "
            f"attributes={h[_H_ATTRIBUTES]:#06x}, crc={h[_H_CRC]}, "
            f"records_count={h[_H_RECORDS_COUNT]})"
        )

    # --- header fields --------------------------------------------------------------------

    @property
    def position(self) -> int:
        """Where the batch starts in its buffer."""
        return self._position

    @property
    def base_offset(self) -> int:
        return self._header[_H_BASE_OFFSET]

    @property
    def length(self) -> int:
        """The raw Length field: the batch's size minus :data:`LOG_OVERHEAD`."""
        return self._header[_H_LENGTH]

    @property
    def size_in_bytes(self) -> int:
        """The whole batch's size, ``length + 12``."""
        return self._header[_H_LENGTH] + LOG_OVERHEAD

    @property
    def partition_leader_epoch(self) -> int:
        return self._header[_H_PARTITION_LEADER_EPOCH]

    @property
    def magic(self) -> int:
        return self._header[_H_MAGIC]

    @property
    def crc(self) -> int:
        """The stored CRC (see :meth:`compute_crc` for the actual one)."""
        return self._header[_H_CRC]

    @property
    def attributes(self) -> int:
        return self._header[_H_ATTRIBUTES] & 0xFFFF

    @property
    def compression(self) -> Compression:
        """The codec of attribute bits 0-2.

        Raises :class:`~odradek.errors.CorruptRecordError` for ids 5-7, which no codec has.
        """
        codec_id = self._header[_H_ATTRIBUTES] & COMPRESSION_CODEC_MASK
        try:
            return Compression(codec_id)
        except ValueError:
            raise CorruptRecordError(
                f"batch at position {self._position}: unknown compression type id {codec_id}"
            ) from None

    @property
    def timestamp_type(self) -> TimestampType:
        if self._header[_H_ATTRIBUTES] & TIMESTAMP_TYPE_MASK:
            return TimestampType.LOG_APPEND_TIME
        return TimestampType.CREATE_TIME

    @property
    def is_transactional(self) -> bool:
        return bool(self._header[_H_ATTRIBUTES] & TRANSACTIONAL_FLAG_MASK)

    @property
    def is_control(self) -> bool:
        return bool(self._header[_H_ATTRIBUTES] & CONTROL_FLAG_MASK)

    @property
    def has_delete_horizon(self) -> bool:
        return bool(self._header[_H_ATTRIBUTES] & DELETE_HORIZON_FLAG_MASK)

    @property
    def delete_horizon_ms(self) -> int | None:
        """The delete horizon (stored as BaseTimestamp) if attribute bit 6 is set, else None."""
        if self._header[_H_ATTRIBUTES] & DELETE_HORIZON_FLAG_MASK:
            return self._header[_H_BASE_TIMESTAMP]
        return None

    @property
    def base_timestamp(self) -> int:
        """The raw BaseTimestamp field (the delete horizon when :attr:`has_delete_horizon`)."""
        return self._header[_H_BASE_TIMESTAMP]

    @property
    def max_timestamp(self) -> int:
        return self._header[_H_MAX_TIMESTAMP]

    @property
    def last_offset_delta(self) -> int:
        return self._header[_H_LAST_OFFSET_DELTA]

    @property
    def last_offset(self) -> int:
        """``base_offset + last_offset_delta``."""
        return self._header[_H_BASE_OFFSET] + self._header[_H_LAST_OFFSET_DELTA]

    @property
    def next_offset(self) -> int:
        """``last_offset + 1``."""
        return self._header[_H_BASE_OFFSET] + self._header[_H_LAST_OFFSET_DELTA] + 1

    @property
    def producer_id(self) -> int:
        return self._header[_H_PRODUCER_ID]

    @property
    def producer_epoch(self) -> int:
        return self._header[_H_PRODUCER_EPOCH]

    @property
    def base_sequence(self) -> int:
        return self._header[_H_BASE_SEQUENCE]

    @property
    def records_count(self) -> int:
        return self._header[_H_RECORDS_COUNT]

    # --- whole-batch access -----------------------------------------------------------------

    def _check_complete(self) -> None:
        """Raise CorruptRecordError unless magic is 2 and the batch is >= 61 bytes, in bounds."""
        h = self._header
        if h[_H_MAGIC] != MAGIC_V2:
            raise CorruptRecordError(
                f"batch at position {self._position}: magic {h[_H_MAGIC]} is not "
                f"{MAGIC_V2} (only record batch v2 is supported)"
            )
        size = h[_H_LENGTH] + LOG_OVERHEAD
        if size < RECORD_BATCH_OVERHEAD:
            raise CorruptRecordError(
                f"batch at position {self._position} is corrupt (the size {size} is smaller "
                f"than the minimum allowed overhead {RECORD_BATCH_OVERHEAD})"
            )
        available = _buffer_len(self._buf) - self._position
        if size > available:
            raise CorruptRecordError(
                f"batch at position {self._position}: its size {size} runs past the end of "
                f"the buffer ({available} bytes available)"
            )

    def buffer(self) -> memoryview:
        """Exactly the batch's bytes, as a view of the underlying buffer (no copy).

        While the view is alive a ``bytearray`` underneath cannot be resized; release it
        (``with batch.buffer() as view:``) when done. Raises
        :class:`~odradek.errors.CorruptRecordError` if the batch runs past the buffer's end.
        """
        size = self._header[_H_LENGTH] + LOG_OVERHEAD
        available = _buffer_len(self._buf) - self._position
        if size < 0 or size > available:
            raise CorruptRecordError(
                f"batch at position {self._position}: its size {size} runs past the end of "
                f"the buffer ({available} bytes available)"
            )
        return _byte_view(self._buf)[self._position : self._position + size]

    def compute_crc(self) -> int:
        """The CRC-32C of the batch's bytes [21, end), whatever the stored CRC says.

        Raises :class:`~odradek.errors.CorruptRecordError` if the batch is shorter than its
        header or runs past the buffer's end.
        """
        size = self._header[_H_LENGTH] + LOG_OVERHEAD
        available = _buffer_len(self._buf) - self._position
        if size < RECORD_BATCH_OVERHEAD or size > available:
            raise CorruptRecordError(
                f"batch at position {self._position}: cannot compute the CRC of a batch of "
                f"size {size} ({available} bytes available)"
            )
        start = self._position + ATTRIBUTES_OFFSET
        return _crc_of(self._buf, start, self._position + size)

    def is_valid(self) -> bool:
        """Whether :meth:`validate` would pass. Never raises."""
        try:
            self.validate()
        except CorruptRecordError:
            return False
        return True

    def validate(self) -> None:
        """Check the batch as Kafka's ``ensureValid`` does, plus magic and bounds.

        Raises :class:`~odradek.errors.CorruptRecordError` if the magic is not 2, the size is
        below 61 bytes, the batch runs past the end of the buffer, or the stored CRC differs
        from the computed one (the message gives both).
        """
        self._check_complete()
        computed = self.compute_crc()
        stored = self._header[_H_CRC]
        if computed != stored:
            raise CorruptRecordError(
                f"batch at position {self._position}: record is corrupt "
                f"(stored crc = {stored}, computed crc = {computed})"
            )

    def records(self) -> list[Record]:
        """Every record, decompressed and decoded, with absolute offsets and timestamps.

        With LOG_APPEND_TIME every record's timestamp is :attr:`max_timestamp`, as in Kafka;
        a stored ``NO_TIMESTAMP`` (-1) decodes as ``None``. Does not check the CRC (call
        :meth:`validate` first for untrusted input). Raises
        :class:`~odradek.errors.CorruptRecordError` if the batch is incomplete, its magic is not
        2, its codec is unknown, its payload does not decompress, or its records are malformed
        or disagree with RecordsCount.
        """
        return self._decode(decode_records)

    def columns(self) -> RecordColumns:
        """Every record as columns (:func:`~odradek.records.record.decode_columns`): offsets,
        timestamps (-1 for none; the append time with LOG_APPEND_TIME), keys, values, headers.
        Raises as :meth:`records`."""
        return self._decode(decode_columns)

    def section(self) -> Section:
        """The record section, decompressed, with what its records are relative to:
        :func:`~odradek.records.record.decode_columns`'s arguments. Raises as :meth:`records`
        for an incomplete batch, a negative record count or a payload that does not
        decompress."""
        self._check_complete()
        h = self._header
        count = h[_H_RECORDS_COUNT]
        if count < 0:
            raise CorruptRecordError(
                f"batch at position {self._position}: found invalid record count {count}"
            )
        start = self._position + RECORD_BATCH_OVERHEAD
        stop = self._position + h[_H_LENGTH] + LOG_OVERHEAD
        data = _copy(self._buf, start, stop) if count else b""
        codec = self.compression
        if count and codec is not Compression.NONE:
            data = decompress(codec, data)
        log_append_time = h[_H_MAX_TIMESTAMP] if h[_H_ATTRIBUTES] & TIMESTAMP_TYPE_MASK else None
        return data, count, h[_H_BASE_OFFSET], h[_H_BASE_TIMESTAMP], log_append_time

    def _decode(
        self,
        decode: Callable[[bytes, int, int, int, int | None], _T],
        section: Section | None = None,
    ) -> _T:
        data, count, base_offset, base_timestamp, log_append_time = section or self.section()
        try:
            return decode(data, count, base_offset, base_timestamp, log_append_time)
        except CorruptRecordError as exc:
            raise CorruptRecordError(f"batch at position {self._position}: {exc.message}") from None


def columns_of(batches: Sequence[RecordBatch]) -> RecordColumns:
    """The columns of every record of ``batches``, one batch after another: as
    :meth:`RecordBatch.columns` of each, concatenated, but laid out at once
    (:func:`~odradek.records.record.layout_columns`) so that small batches share the cost of
    the layout's numpy calls. Raises as :meth:`RecordBatch.records`, naming the batch."""
    if len(batches) == 1:
        return batches[0].columns()
    sections = [batch.section() for batch in batches]
    columns = layout_columns(sections)
    if columns is not None:
        return columns
    offsets: list[int] = []
    timestamps: list[int] = []
    keys: list[bytes | None] = []
    values: list[bytes | None] = []
    headers: list[tuple[Header, ...]] = []
    for batch, section in zip(batches, sections, strict=True):
        o, t, k, v, h = batch._decode(decode_columns, section)
        offsets += o
        timestamps += t
        keys += k
        values += v
        headers += h
    return offsets, timestamps, keys, values, headers


def read_batches(buf: Buffer, start: int = 0, end: int | None = None) -> Iterator[RecordBatch]:
    """Iterate the batches in ``buf[start:end]`` with the rules of Kafka's ``FileLogInputStream``.

    At each position: if no more than 17 bytes (:data:`HEADER_SIZE_UP_TO_MAGIC`) remain before
    ``end``, stop; read the Length field, and raise :class:`~odradek.errors.CorruptRecordError`
    if it is below 14 (:data:`RECORD_OVERHEAD_V0`); if the batch runs past ``end``, stop (a torn
    tail ends iteration silently); raise ``CorruptRecordError`` if its magic is not 2;
    otherwise yield it and move past it. ``end`` defaults to (and is capped at) the buffer's
    length. CRCs are not checked: call :meth:`RecordBatch.validate`.

    Raises ``ValueError`` at once for a negative ``start``; ``CorruptRecordError`` while
    iterating, as above, or when a batch shorter than 61 bytes sits at the buffer's very end.
    """
    if start < 0:
        raise ValueError(f"negative start {start}")
    limit = _buffer_len(buf)
    stop = limit if end is None else min(end, limit)
    return _iterate(buf, start, stop)


def _iterate(buf: Buffer, position: int, end: int) -> Iterator[RecordBatch]:
    unpack_length = _INT32.unpack_from
    while position < end - HEADER_SIZE_UP_TO_MAGIC:
        (length,) = unpack_length(buf, position + LENGTH_OFFSET)
        if length < RECORD_OVERHEAD_V0:
            raise CorruptRecordError(
                f"record size {length} at position {position} is less than the minimum "
                f"record overhead ({RECORD_OVERHEAD_V0})"
            )
        if position > end - LOG_OVERHEAD - length:
            return
        magic = buf[position + MAGIC_OFFSET]
        if magic != MAGIC_V2:
            raise CorruptRecordError(
                f"batch at position {position}: magic {magic} is not {MAGIC_V2} "
                f"(only record batch v2 is supported)"
            )
        yield RecordBatch(buf, position)
        position += length + LOG_OVERHEAD


def batch_size_at(buf: Buffer, position: int) -> int | None:
    """The size in bytes (Length + 12) of the batch starting at ``position``, or ``None`` if
    fewer than 12 bytes are there to read it from. Checks nothing else; never raises for a
    non-negative position (``ValueError`` for a negative one).
    """
    if position < 0:
        raise ValueError(f"negative batch position {position}")
    if _buffer_len(buf) - position < LOG_OVERHEAD:
        return None
    (length,) = _INT32.unpack_from(buf, position + LENGTH_OFFSET)
    return int(length) + LOG_OVERHEAD


# --- in-place rewrites ------------------------------------------------------------------------

WritableBuffer: TypeAlias = bytearray | memoryview | mmap.mmap


def _check_header_fits(buf: WritableBuffer, position: int) -> None:
    if position < 0 or _buffer_len(buf) - position < RECORD_BATCH_OVERHEAD:
        raise ValueError(
            f"no {RECORD_BATCH_OVERHEAD}-byte batch header at position {position} in a buffer "
            f"of {_buffer_len(buf)} bytes"
        )


def _pack(packer: struct.Struct, buf: WritableBuffer, at: int, value: int, what: str) -> None:
    try:
        packer.pack_into(buf, at, value)
    except struct.error:
        raise ValueError(f"{what} {value} is out of range") from None


def set_base_offset(buf: WritableBuffer, position: int, base_offset: int) -> None:
    """Overwrite the BaseOffset of the batch at ``position``, in place.

    BaseOffset is outside the CRC, so the batch stays valid. Raises ``ValueError`` if no
    61-byte header fits at ``position`` or ``base_offset`` is not an int64, and ``TypeError``
    if ``buf`` is read-only.
    """
    _check_header_fits(buf, position)
    _pack(_INT64, buf, position + BASE_OFFSET_OFFSET, base_offset, "base offset")


def set_partition_leader_epoch(buf: WritableBuffer, position: int, epoch: int) -> None:
    """Overwrite the PartitionLeaderEpoch of the batch at ``position``, in place.

    The field is outside the CRC, so the batch stays valid. Raises ``ValueError`` if no 61-byte
    header fits at ``position`` or ``epoch`` is not an int32, and ``TypeError`` if ``buf`` is
    read-only.
    """
    _check_header_fits(buf, position)
    _pack(_INT32, buf, position + PARTITION_LEADER_EPOCH_OFFSET, epoch, "partition leader epoch")


def set_log_append_time(buf: WritableBuffer, position: int, timestamp_ms: int) -> None:
    """Make the batch at ``position`` a LOG_APPEND_TIME batch stamped ``timestamp_ms``, in place.

    Sets attribute bit 3 (other bits, the delete-horizon flag included, are kept), writes
    ``timestamp_ms`` as MaxTimestamp and recomputes the CRC, as Kafka's
    ``DefaultRecordBatch.setMaxTimestamp``; does nothing if both already hold. Because the CRC
    is recomputed, a corrupt batch would become "valid": validate before calling.

    Raises ``ValueError`` if no 61-byte header fits at ``position`` or ``timestamp_ms`` is not
    an int64; :class:`~odradek.errors.CorruptRecordError` if the batch's magic is not 2, its
    size is below 61 or it runs past the buffer's end; ``TypeError`` if ``buf`` is read-only.
    """
    _check_header_fits(buf, position)
    batch = RecordBatch(buf, position)
    batch._check_complete()
    header = batch._header
    attributes = header[_H_ATTRIBUTES]
    if attributes & TIMESTAMP_TYPE_MASK and header[_H_MAX_TIMESTAMP] == timestamp_ms:
        return
    _pack(_INT64, buf, position + MAX_TIMESTAMP_OFFSET, timestamp_ms, "timestamp")
    _INT16.pack_into(buf, position + ATTRIBUTES_OFFSET, attributes | TIMESTAMP_TYPE_MASK)
    size = header[_H_LENGTH] + LOG_OVERHEAD
    crc = _crc_of(buf, position + ATTRIBUTES_OFFSET, position + size)
    _UINT32.pack_into(buf, position + CRC_OFFSET, crc)


# --- the broker's append path ----------------------------------------------------------------


class BatchHeader(NamedTuple):
    """A batch's position and size in a buffer, with its header fields (no records decoded)."""

    position: int
    size_in_bytes: int
    base_offset: int
    length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_FLAG_MASK)


def validated_headers(buf: Buffer, *, allow_partial_tail: bool = False) -> list[BatchHeader]:
    """Parse and CRC-check every batch in ``buf`` without decoding any record.

    This is the broker's append path, so it is one tight loop: per batch one header unpack and
    one CRC-32C over attributes..end. ``buf`` must hold whole batches back to back; with
    ``allow_partial_tail`` (a follower's fetch may end mid-batch) an incomplete last batch is
    left out instead. Raises :class:`~odradek.errors.CorruptRecordError` for a length below
    the v2 header, a magic other than 2, a CRC mismatch, or (without ``allow_partial_tail``)
    trailing bytes that do not form a whole batch.
    """
    mv = memoryview(buf)
    if mv.format != "B":
        mv = mv.cast("B")
    end = mv.nbytes
    unpack = HEADER_STRUCT.unpack_from
    checksum = crc32c.crc32c
    make = BatchHeader._make
    out: list[BatchHeader] = []
    position = 0
    while position < end:
        if end - position < RECORD_BATCH_OVERHEAD:
            if allow_partial_tail:
                break
            raise CorruptRecordError(
                f"{end - position} trailing bytes at position {position} are not a whole batch"
            )
        header = unpack(mv, position)
        length = header[_H_LENGTH]
        size = length + LOG_OVERHEAD
        if size < RECORD_BATCH_OVERHEAD:
            raise CorruptRecordError(
                f"batch at position {position} has size {size}, below the "
                f"{RECORD_BATCH_OVERHEAD}-byte v2 header"
            )
        if position + size > end:
            if allow_partial_tail:
                break
            raise CorruptRecordError(
                f"batch at position {position} of size {size} runs past the end ({end})"
            )
        if header[_H_MAGIC] != MAGIC_V2:
            raise CorruptRecordError(
                f"batch at position {position}: magic {header[_H_MAGIC]} is not {MAGIC_V2}"
            )
        stored = header[_H_CRC]
        computed = checksum(mv[position + ATTRIBUTES_OFFSET : position + size])
        if computed != stored:
            raise CorruptRecordError(
                f"batch at position {position}: stored CRC {stored:#010x} does not match "
                f"the computed CRC {computed:#010x}"
            )
        out.append(make((position, size, *header)))
        position += size
    return out


def stamp_batch(buf: WritableBuffer, position: int, base_offset: int, leader_epoch: int) -> None:
    """Write a batch's BaseOffset and PartitionLeaderEpoch in place (both outside the CRC).

    The leader's offset assignment; ``position`` must come from :func:`validated_headers`.
    Raises ``struct.error`` if either value does not fit its field.
    """
    _INT64.pack_into(buf, position, base_offset)
    _INT32.pack_into(buf, position + PARTITION_LEADER_EPOCH_OFFSET, leader_epoch)
