"""The leader's recompression of produced batches to the topic's ``compression.type``.

Kafka's ``LogValidator`` stores a client's batch with the codec the topic asks for: with
``compression.type=producer`` (the default) every batch keeps the codec its producer chose;
with ``uncompressed``, ``gzip``, ``snappy``, ``lz4`` or ``zstd`` a batch sent with another codec
is rebuilt (``validateMessagesAndAssignOffsetsCompressed``, not in place when the source and
target codecs differ) at the level of ``compression.<codec>.level`` (KIP-390). A batch already
in the target codec is stored as sent, whatever level it was compressed at.

:func:`recompress` keeps everything of the batch but its records section's codec: the record
bytes themselves (so each record's key, value, headers, timestamp delta and offset delta), the
base and max timestamps, the producer id, epoch and base sequence, the transactional flag, the
timestamp type and the record count; it rewrites the codec bits of the attributes, the length
and the CRC-32C. Kafka's rebuild writes offset deltas 0, 1, 2, …: so does this module, by
rebuilding an uncompressed batch whose deltas are not (Kafka does not refuse those, and
compressed ones are refused before: :mod:`storage.log_validator`).

Pure: bytes in, bytes out; thread-safe.
"""

from __future__ import annotations

import struct

import crc32c

from odradek.records import (
    ATTRIBUTES_OFFSET,
    BASE_TIMESTAMP_OFFSET,
    COMPRESSION_CODEC_MASK,
    CRC_OFFSET,
    LENGTH_OFFSET,
    LOG_OVERHEAD,
    RECORD_BATCH_OVERHEAD,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_FLAG_MASK,
    BatchHeader,
    Compression,
    RecordBatch,
    build_batch,
    compress,
)
from odradek.records.record import decode_columns
from storage.config import LogConfig

__all__ = ["recompress", "target_compression"]

_BY_CONFIG = {
    "uncompressed": Compression.NONE,
    "gzip": Compression.GZIP,
    "snappy": Compression.SNAPPY,
    "lz4": Compression.LZ4,
    "zstd": Compression.ZSTD,
}
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")
_UINT32 = struct.Struct(">I")


def target_compression(config: LogConfig) -> tuple[Compression, int | None] | None:
    """The codec and level the log stores batches with; ``None`` for ``producer`` (as sent)."""
    codec = _BY_CONFIG.get(config.compression_type)
    if codec is None:
        return None
    level = {
        Compression.GZIP: config.compression_gzip_level,
        Compression.LZ4: config.compression_lz4_level,
        Compression.ZSTD: config.compression_zstd_level,
    }.get(codec)
    return codec, level


def recompress(
    buf: bytes | bytearray | memoryview, h: BatchHeader, codec: Compression, level: int | None
) -> bytes:
    """The batch ``h`` of ``buf`` (validated: CRC right, records read) with its records section
    in ``codec``; see the module docstring for what is kept. Raises
    :class:`~odradek.errors.CorruptRecordError` if its section does not decompress."""
    batch = RecordBatch(buf, h.position)
    section = batch.section()
    data = section[0]
    base_timestamp = h.base_timestamp
    if batch.compression is Compression.NONE and not _incremental(section):
        rebuilt = _renumbered(batch)
        data = rebuilt[RECORD_BATCH_OVERHEAD:]
        (base_timestamp,) = _INT64.unpack_from(rebuilt, BASE_TIMESTAMP_OFFSET)
    body = compress(codec, data, level)
    out = bytearray(RECORD_BATCH_OVERHEAD + len(body))
    out[:RECORD_BATCH_OVERHEAD] = memoryview(buf)[h.position : h.position + RECORD_BATCH_OVERHEAD]
    out[RECORD_BATCH_OVERHEAD:] = body
    _INT32.pack_into(out, LENGTH_OFFSET, len(out) - LOG_OVERHEAD)
    _INT64.pack_into(out, BASE_TIMESTAMP_OFFSET, base_timestamp)
    attributes = (h.attributes & ~COMPRESSION_CODEC_MASK) | int(codec)
    _INT16.pack_into(out, ATTRIBUTES_OFFSET, attributes)
    _UINT32.pack_into(out, CRC_OFFSET, crc32c.crc32c(memoryview(out)[ATTRIBUTES_OFFSET:]))
    return bytes(out)


def _incremental(section: tuple[bytes, int, int, int, int | None]) -> bool:
    offsets = decode_columns(*section)[0]
    base = section[2]
    return all(offset - base == index for index, offset in enumerate(offsets))


def _renumbered(batch: RecordBatch) -> bytes:
    """``batch`` rebuilt with offset deltas 0, 1, 2, … (as Kafka's
    ``MemoryRecordsBuilder.appendWithOffset``), everything else of each record kept; its
    BaseTimestamp is the first record's, as the builder writes it."""
    attributes = batch.attributes
    rebuilt = build_batch(
        batch.records(),
        producer_id=batch.producer_id,
        producer_epoch=batch.producer_epoch,
        base_sequence=batch.base_sequence,
        is_transactional=bool(attributes & TRANSACTIONAL_FLAG_MASK),
        timestamp_type="log_append_time" if attributes & TIMESTAMP_TYPE_MASK else "create_time",
    )
    return rebuilt
