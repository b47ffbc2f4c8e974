"""What compaction does to one record batch: map its keys, or filter and rewrite it.

The record-level half of Kafka's cleaner (``LogCleaner.buildOffsetMapForSegment``,
``LogCleaner.cleanInto`` and ``MemoryRecords.filterTo``), on batches as they lie in a buffer
read from a segment (:mod:`odradek.records` describes the layout). Pure: bytes in, bytes out.

Mapping (:func:`put_keys`): every keyed record at or after the first dirty offset is put in the
:class:`~storage.offset_map.OffsetMap`, until the map is full.

Filtering (:func:`filter_batch`) keeps a record if its offset is past the map's latest offset,
or if it has a key, no later offset in the map for that key, and either a value or — a
tombstone — a delete horizon that has not passed (none yet counts as not passed). Records
without a key in the cleaned range are dropped. Control batches are kept whole (what happens
to transactions is :mod:`storage.cleaned_transactions`'s: :func:`discard_batch` drops an aborted
transaction's records, :func:`with_delete_horizon` stamps a marker that may go). Then:

* nothing dropped and no horizon to set → the batch's original bytes;
* otherwise a batch rebuilt with the same base offset, last offset delta (so offsets and the
  producer's last sequence stay), partition leader epoch, producer fields, timestamp type and
  codec — the records section is re-compressed with the batch's own codec — holding the
  surviving records' bytes unchanged; the max timestamp is that of the survivors;
* a batch holding a surviving tombstone and no delete horizon yet gets one: attribute bit 6 and
  BaseTimestamp = now + ``delete_retention_ms``, its records' timestamp deltas re-encoded
  against it so their timestamps do not change (Kafka's ``MemoryRecords.filterTo``);
* nothing survives → the batch is dropped, or, if asked to (``retain_empty``), written as a
  61-byte header with no records that keeps its offsets (Kafka's ``writeEmptyHeader``).

Deviation from Kafka: a rebuilt batch keeps its original BaseTimestamp (or gets the horizon)
instead of taking its first surviving record's timestamp; record timestamps decode the same.

The cleaner checks every batch's CRC-32C with :func:`check_crc` before handing it to either
function, so that a corrupt batch raises :class:`~odradek.errors.CorruptRecordError` rather
than being rewritten with a fresh CRC. Thread-safe as far as the offset map is used by one
thread at a time.
"""

from __future__ import annotations

from typing import NamedTuple
from zlib import crc32

from crc32c import crc32c

from odradek.errors import CorruptRecordError
from odradek.records import (
    ATTRIBUTES_OFFSET,
    COMPRESSION_CODEC_MASK,
    CONTROL_FLAG_MASK,
    CRC_OFFSET,
    DELETE_HORIZON_FLAG_MASK,
    LOG_OVERHEAD,
    MAGIC_V2,
    RECORD_BATCH_OVERHEAD,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_FLAG_MASK,
    Compression,
    RecordBatch,
    build_batch,
    compress,
    decompress,
)
from odradek.records.batch import HEADER_STRUCT
from odradek.records.varint import decode_varint, decode_varlong, encode_varint, encode_varlong
from storage.offset_map import CHECK_BITS, CHECK_MASK, MAX_OFFSET_SPAN, OffsetMap

__all__ = [
    "H_ATTRIBUTES",
    "H_BASE_OFFSET",
    "H_LAST_OFFSET_DELTA",
    "H_LENGTH",
    "H_MAX_TIMESTAMP",
    "H_RECORDS_COUNT",
    "FilterOutcome",
    "check_crc",
    "discard_batch",
    "filter_batch",
    "with_delete_horizon",
    "put_keys",
]

# Indexes into HEADER_STRUCT's tuple.
H_BASE_OFFSET = 0
H_LENGTH = 1
H_PARTITION_LEADER_EPOCH = 2
H_MAGIC = 3
H_CRC = 4
H_ATTRIBUTES = 5
H_LAST_OFFSET_DELTA = 6
H_BASE_TIMESTAMP = 7
H_MAX_TIMESTAMP = 8
H_PRODUCER_ID = 9
H_PRODUCER_EPOCH = 10
H_BASE_SEQUENCE = 11
H_RECORDS_COUNT = 12

_EMPTY_BATCH_KEPT_FLAGS = TIMESTAMP_TYPE_MASK | TRANSACTIONAL_FLAG_MASK | CONTROL_FLAG_MASK


class FilterOutcome(NamedTuple):
    """The result of filtering one batch. (A named tuple: one per batch on the hot path.)"""

    data: bytes | memoryview | None
    """The batch to write (the original bytes or a rebuilt batch), or None to drop it."""
    max_timestamp: int
    """The written batch's MaxTimestamp (for the segment's time index)."""
    records_read: int
    records_retained: int
    rewritten: bool
    """Whether ``data`` is a rebuilt batch rather than the original bytes."""


def check_crc(view: memoryview, position: int, header: tuple[int, ...]) -> None:
    """Raise ``CorruptRecordError`` unless the batch at ``position`` of ``view`` has magic 2,
    at least a v2 header and a matching CRC-32C."""
    size = header[H_LENGTH] + LOG_OVERHEAD
    if header[H_MAGIC] != MAGIC_V2 or size < RECORD_BATCH_OVERHEAD:
        raise CorruptRecordError(
            f"batch at offset {header[H_BASE_OFFSET]}: magic {header[H_MAGIC]}, size {size}"
        )
    computed = crc32c(view[position + ATTRIBUTES_OFFSET : position + size])
    if computed != header[H_CRC]:
        raise CorruptRecordError(
            f"batch at offset {header[H_BASE_OFFSET]} is corrupt (stored crc = "
            f"{header[H_CRC]}, computed crc = {computed})"
        )


def _records_section(
    buf: bytes, position: int, header: tuple[int, ...]
) -> tuple[bytes, int, int, Compression]:
    """(data, start, end, codec) of the batch's records, decompressed if need be."""
    start = position + RECORD_BATCH_OVERHEAD
    end = position + header[H_LENGTH] + LOG_OVERHEAD
    codec_id = header[H_ATTRIBUTES] & COMPRESSION_CODEC_MASK
    if codec_id == 0:
        return buf, start, end, Compression.NONE
    try:
        codec = Compression(codec_id)
    except ValueError:
        raise CorruptRecordError(f"unknown compression type id {codec_id}") from None
    data = decompress(codec, buf[start:end])
    return data, 0, len(data), codec


def put_keys(
    buf: bytes, position: int, header: tuple[int, ...], start_offset: int, offset_map: OffsetMap
) -> bool:
    """Put the keys of the batch's records at offsets ≥ ``start_offset`` into the map.

    Returns True, having put nothing more, as soon as the map is full before a put — a key
    already in the map included, as in Kafka — so the map's latest offset tells how far the
    pass reaches. Control batches and keyless records put nothing. Raises
    ``CorruptRecordError`` for malformed records (call :func:`check_crc` first).
    """
    if header[H_ATTRIBUTES] & CONTROL_FLAG_MASK:
        return False
    if header[H_ATTRIBUTES] & COMPRESSION_CODEC_MASK:
        data, pos, end, _ = _records_section(buf, position, header)
    else:
        data, pos, end = buf, position + RECORD_BATCH_OVERHEAD, position + header[H_LENGTH] + 12
    base_offset = header[H_BASE_OFFSET]
    # OffsetMap.put, inlined (see OffsetMap.tables); so are varints of one and two bytes,
    # which are nearly all of them: a call per field would cost more than the rest.
    table, slots, touched = offset_map.tables()
    steps = slots - 1
    map_base = offset_map.base
    size = offset_map.size
    room = offset_map.max_entries - size
    tracked = len(touched) - size  # new keys whose slot is still recorded in touched
    added = 0
    latest = offset_map.latest_offset
    full = False
    try:
        for _ in range(header[H_RECORDS_COUNT]):
            b = data[pos]
            if b < 0x80:
                length = (b >> 1) ^ -(b & 1)
                pos += 1
            elif data[pos + 1] < 0x80:
                u = (b & 0x7F) | data[pos + 1] << 7
                length = (u >> 1) ^ -(u & 1)
                pos += 2
            else:
                length, pos = decode_varint(data, pos)
            record_end = pos + length
            if length < 0 or record_end > end:
                raise CorruptRecordError(f"invalid record size {length}")
            p = pos + 1  # attributes
            while data[p] & 0x80:  # timestamp delta: skipped
                p += 1
            p += 1
            b = data[p]
            if b < 0x80:
                offset_delta = (b >> 1) ^ -(b & 1)
                p += 1
            elif data[p + 1] < 0x80:
                u = (b & 0x7F) | data[p + 1] << 7
                offset_delta = (u >> 1) ^ -(u & 1)
                p += 2
            else:
                offset_delta, p = decode_varint(data, p)
            b = data[p]
            if b < 0x80:
                key_length = (b >> 1) ^ -(b & 1)
                p += 1
            elif data[p + 1] < 0x80:
                u = (b & 0x7F) | data[p + 1] << 7
                key_length = (u >> 1) ^ -(u & 1)
                p += 2
            else:
                key_length, p = decode_varint(data, p)
            offset = base_offset + offset_delta
            pos = record_end
            if key_length < 0 or offset < start_offset:
                continue
            if p + key_length > record_end:
                raise CorruptRecordError("key overruns its record")
            if added >= room or offset - map_base > MAX_OFFSET_SPAN:
                full = True
                break
            key = data[p : p + key_length]
            fingerprint = hash(key)
            check = crc32(key) & CHECK_MASK
            i = fingerprint % slots
            j = i + i
            word = table[j + 1]
            if word and (table[j] != fingerprint or word & CHECK_MASK != check):
                step = 1 + check % steps
                while True:
                    i += step
                    if i >= slots:
                        i -= slots
                    j = i + i
                    word = table[j + 1]
                    if not word or (table[j] == fingerprint and word & CHECK_MASK == check):
                        break
            if not word:
                table[j] = fingerprint
                if added < tracked:
                    touched[size + added] = i
                added += 1
            table[j + 1] = (offset - map_base + 1) << CHECK_BITS | check
            latest = offset
    except IndexError:
        raise CorruptRecordError(
            f"batch at offset {base_offset}: truncated record section"
        ) from None
    finally:
        offset_map.record_puts(added, latest)
    if not full and pos != end:
        raise CorruptRecordError(f"batch at offset {base_offset}: {end - pos} bytes left over")
    return full


def filter_batch(
    buf: bytes,
    view: memoryview,
    position: int,
    header: tuple[int, ...],
    offset_map: OffsetMap,
    now_ms: int,
    delete_retention_ms: int,
    retain_empty: bool,
) -> FilterOutcome:
    """Filter the batch at ``position`` of ``buf`` (``view`` is a memoryview of ``buf``) by
    the rules in the module docstring. Raises ``CorruptRecordError`` for malformed records
    (call :func:`check_crc` first)."""
    size = header[H_LENGTH] + LOG_OVERHEAD
    count = header[H_RECORDS_COUNT]
    attributes = header[H_ATTRIBUTES]
    if attributes & CONTROL_FLAG_MASK:
        whole = view[position : position + size]
        return FilterOutcome(whole, header[H_MAX_TIMESTAMP], count, count, False)
    if attributes & COMPRESSION_CODEC_MASK:
        data, pos, end, codec = _records_section(buf, position, header)
    else:
        data, pos, end, codec = buf, position + RECORD_BATCH_OVERHEAD, position + size, None
    base_offset = header[H_BASE_OFFSET]
    base_timestamp = header[H_BASE_TIMESTAMP]
    has_horizon = bool(attributes & DELETE_HORIZON_FLAG_MASK)
    horizon_passed = has_horizon and now_ms >= base_timestamp
    latest = offset_map.latest_offset
    # OffsetMap.get, inlined (see OffsetMap.tables), and one- and two-byte varints too.
    table, slots, _ = offset_map.tables()
    steps = slots - 1
    map_base = offset_map.base - 1  # a word holds offset - base + 1
    # Survivors' [start, end) in ``data``, flattened; a start is that of the length varint.
    kept: list[int] = []
    keep = kept.append
    tombstone_kept = False
    max_timestamp = -1
    try:
        for _ in range(count):
            record_start = pos
            b = data[pos]
            if b < 0x80:
                length = (b >> 1) ^ -(b & 1)
                pos += 1
            elif data[pos + 1] < 0x80:
                u = (b & 0x7F) | data[pos + 1] << 7
                length = (u >> 1) ^ -(u & 1)
                pos += 2
            else:
                length, pos = decode_varint(data, pos)
            record_end = pos + length
            if length < 0 or record_end > end:
                raise CorruptRecordError(f"invalid record size {length}")
            p = pos + 1  # attributes
            b = data[p]
            if b < 0x80:
                timestamp_delta = (b >> 1) ^ -(b & 1)
                p += 1
            elif data[p + 1] < 0x80:
                u = (b & 0x7F) | data[p + 1] << 7
                timestamp_delta = (u >> 1) ^ -(u & 1)
                p += 2
            else:
                timestamp_delta, p = decode_varlong(data, p)
            b = data[p]
            if b < 0x80:
                offset_delta = (b >> 1) ^ -(b & 1)
                p += 1
            elif data[p + 1] < 0x80:
                u = (b & 0x7F) | data[p + 1] << 7
                offset_delta = (u >> 1) ^ -(u & 1)
                p += 2
            else:
                offset_delta, p = decode_varint(data, p)
            b = data[p]
            if b < 0x80:
                key_length = (b >> 1) ^ -(b & 1)
                p += 1
            elif data[p + 1] < 0x80:
                u = (b & 0x7F) | data[p + 1] << 7
                key_length = (u >> 1) ^ -(u & 1)
                p += 2
            else:
                key_length, p = decode_varint(data, p)
            pos = record_end
            key_end = p + key_length if key_length > 0 else p
            if key_end >= record_end:
                raise CorruptRecordError("key overruns its record")
            # The value length's sign is the lowest bit of its first byte (zig-zag: odd is
            # negative), and a negative length is a null value: a tombstone.
            value_is_null = data[key_end] & 1 == 1
            if base_offset + offset_delta <= latest:
                if key_length < 0:
                    continue  # keyless records have no place in a compacted log
                key = data[p:key_end]
                fingerprint = hash(key)
                check = crc32(key) & CHECK_MASK
                i = fingerprint % slots
                j = i + i
                word = table[j + 1]
                if word and (table[j] != fingerprint or word & CHECK_MASK != check):
                    step = 1 + check % steps
                    while True:
                        i += step
                        if i >= slots:
                            i -= slots
                        j = i + i
                        word = table[j + 1]
                        if not word or (table[j] == fingerprint and word & CHECK_MASK == check):
                            break
                # An empty slot: the key is not in the map, nothing supersedes the record.
                if word and base_offset + offset_delta < (word >> CHECK_BITS) + map_base:
                    continue  # superseded
                if value_is_null and horizon_passed:
                    continue  # a tombstone past its delete horizon
            if value_is_null:
                tombstone_kept = True
            timestamp = base_timestamp + timestamp_delta
            if timestamp > max_timestamp:
                max_timestamp = timestamp
            keep(record_start)
            keep(record_end)
    except IndexError:
        raise CorruptRecordError(
            f"batch at offset {base_offset}: truncated record section"
        ) from None
    if pos != end:
        raise CorruptRecordError(f"batch at offset {base_offset}: {end - pos} bytes left over")

    retained = len(kept) >> 1
    if not retained:
        if not retain_empty:
            return FilterOutcome(None, -1, count, 0, False)
        empty = _empty_batch(header)
        return FilterOutcome(empty, header[H_MAX_TIMESTAMP], count, 0, True)
    set_horizon = tombstone_kept and not has_horizon
    if retained == count and not set_horizon:
        whole = view[position : position + size]
        return FilterOutcome(whole, header[H_MAX_TIMESTAMP], count, count, False)
    if attributes & TIMESTAMP_TYPE_MASK:
        max_timestamp = header[H_MAX_TIMESTAMP]  # log append time: the batch's own
    if set_horizon:
        new_base = now_ms + delete_retention_ms
        attributes |= DELETE_HORIZON_FLAG_MASK
        records: bytes | bytearray = _rebased(data, kept, base_timestamp, new_base)
    else:
        new_base = base_timestamp
        source = view if codec is None else data
        records = b"".join([source[kept[j] : kept[j + 1]] for j in range(0, len(kept), 2)])
    if codec is not None:
        records = compress(codec, bytes(records))
    rebuilt = _batch(header, attributes, new_base, max_timestamp, retained, records)
    return FilterOutcome(rebuilt, max_timestamp, count, retained, True)


def discard_batch(header: tuple[int, ...], retain_empty: bool) -> FilterOutcome:
    """Drop every record of the batch (an aborted transaction's, or a marker past its delete
    horizon): the batch goes, or with ``retain_empty`` its header stays, with no records."""
    count = header[H_RECORDS_COUNT]
    if not retain_empty:
        return FilterOutcome(None, -1, count, 0, False)
    return FilterOutcome(_empty_batch(header), header[H_MAX_TIMESTAMP], count, 0, True)


def with_delete_horizon(
    buf: bytes, position: int, header: tuple[int, ...], horizon_ms: int
) -> FilterOutcome:
    """The batch at ``position`` (a transaction marker that may go) rebuilt with a delete
    horizon: attribute bit 6 and BaseTimestamp ``horizon_ms``, its records and their
    timestamps unchanged. Raises ``CorruptRecordError`` for malformed records."""
    batch = RecordBatch(buf, position)
    records = batch.records()
    count = header[H_RECORDS_COUNT]
    rebuilt = build_batch(
        records,
        base_offset=header[H_BASE_OFFSET],
        compression=batch.compression,
        timestamp_type=batch.timestamp_type,
        producer_id=header[H_PRODUCER_ID],
        producer_epoch=header[H_PRODUCER_EPOCH],
        base_sequence=header[H_BASE_SEQUENCE],
        partition_leader_epoch=header[H_PARTITION_LEADER_EPOCH],
        is_transactional=bool(header[H_ATTRIBUTES] & TRANSACTIONAL_FLAG_MASK),
        is_control=bool(header[H_ATTRIBUTES] & CONTROL_FLAG_MASK),
        delete_horizon_ms=horizon_ms,
    )
    if RecordBatch(rebuilt).last_offset_delta != header[H_LAST_OFFSET_DELTA]:
        raise CorruptRecordError(
            f"batch at offset {header[H_BASE_OFFSET]}: its offset deltas are not 0..{count - 1}"
        )
    return FilterOutcome(rebuilt, RecordBatch(rebuilt).max_timestamp, count, count, True)


def _rebased(data: bytes, kept: list[int], old_base: int, new_base: int) -> bytearray:
    """The records at ``kept`` spans with their timestamp deltas re-encoded against
    ``new_base`` (so that base + delta, the record's timestamp, does not change)."""
    out = bytearray()
    for j in range(0, len(kept), 2):
        start, end = kept[j], kept[j + 1]
        _, body = decode_varint(data, start)
        timestamp_delta, rest = decode_varlong(data, body + 1)
        new_body = b"".join(
            (
                data[body : body + 1],  # attributes
                encode_varlong(old_base + timestamp_delta - new_base),
                data[rest:end],
            )
        )
        out += encode_varint(len(new_body))
        out += new_body
    return out


def _batch(
    header: tuple[int, ...],
    attributes: int,
    base_timestamp: int,
    max_timestamp: int,
    count: int,
    records: bytes | bytearray,
) -> bytes:
    out = bytearray(RECORD_BATCH_OVERHEAD)
    out += records
    HEADER_STRUCT.pack_into(
        out,
        0,
        header[H_BASE_OFFSET],
        len(out) - LOG_OVERHEAD,
        header[H_PARTITION_LEADER_EPOCH],
        MAGIC_V2,
        0,
        attributes,
        header[H_LAST_OFFSET_DELTA],
        base_timestamp,
        max_timestamp,
        header[H_PRODUCER_ID],
        header[H_PRODUCER_EPOCH],
        header[H_BASE_SEQUENCE],
        count,
    )
    with memoryview(out) as mv, mv[ATTRIBUTES_OFFSET:] as covered:
        crc = crc32c(covered)
    out[CRC_OFFSET : CRC_OFFSET + 4] = crc.to_bytes(4, "big")
    return bytes(out)


def _empty_batch(header: tuple[int, ...]) -> bytes:
    """A header-only batch keeping the batch's offsets, producer fields and flags."""
    attributes = header[H_ATTRIBUTES] & _EMPTY_BATCH_KEPT_FLAGS
    max_timestamp = header[H_MAX_TIMESTAMP]
    return _batch(header, attributes, max_timestamp, max_timestamp, 0, b"")
