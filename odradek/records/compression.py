"""Record batch compression codecs, in the framings Kafka's Java client writes and reads.

The codec id lives in bits 0-2 of a batch's attributes; only the records section (everything
after the 61-byte header) is compressed, as one stream. Framings (what :func:`compress` writes,
what :func:`decompress` accepts):

* ``gzip`` (1): a standard gzip stream (RFC 1952), as ``java.util.zip.GZIPOutputStream``.
  Accepts concatenated members.
* ``snappy`` (2): the xerial/snappy-java stream that Kafka's ``SnappyOutputStream`` writes:
  the 16-byte header ``\\x82 S N A P P Y \\x00``, int32 version 1, int32 compatible version 1,
  then for each block of at most 32 KiB of input ``[int32 big-endian length, raw snappy block]``.
  Decoding also accepts plain raw snappy with no xerial header, as ``SnappyInputStream`` does.
* ``lz4`` (3): an LZ4 frame as ``KafkaLZ4BlockOutputStream`` writes it: magic ``0x184D2204``,
  FLG ``0x60`` (version 1, independent blocks, no block checksum, no content size, no content
  checksum), BD ``0x40`` (64 KiB maximum block), header checksum ``0x82``; then blocks of at
  most 64 KiB of input, each ``[uint32 little-endian size, data]`` with the size's high bit set
  when the block is stored uncompressed (compression did not shrink it), then the end mark
  ``0x00000000``. Decoding accepts any LZ4 frame (content size, checksums, other block sizes)
  except dependent (linked) blocks, which ``KafkaLZ4BlockInputStream`` also rejects.
* ``zstd`` (4): a standard zstd frame (RFC 8878). Accepts concatenated frames.

The codecs come from ``cramjam``. This module is pure and thread-safe. Decompression failures
raise :class:`~odradek.errors.CorruptRecordError`; unknown codec names
:class:`~odradek.errors.UnsupportedCompressionTypeError`.
"""

from __future__ import annotations

import enum
import struct

import cramjam

from odradek.errors import CorruptRecordError, UnsupportedCompressionTypeError

__all__ = ["Compression", "compress", "decompress"]


class Compression(enum.IntEnum):
    """A batch's compression codec; the value is the id stored in attribute bits 0-2."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4

    @property
    def label(self) -> str:
        """The lowercase name Kafka's ``compression.type`` config uses (``"gzip"``)."""
        return self.name.lower()

    @classmethod
    def from_name(cls, name: str) -> Compression:
        """The codec called ``name`` (``"none"``, ``"gzip"``, ``"snappy"``, ``"lz4"``, ``"zstd"``,
        any case).

        Raises :class:`~odradek.errors.UnsupportedCompressionTypeError` for any other name.
        """
        member = _BY_LABEL.get(name.lower()) if isinstance(name, str) else None
        if member is None:
            raise UnsupportedCompressionTypeError(f"unknown compression type {name!r}")
        return member


_BY_LABEL: dict[str, Compression] = {c.name.lower(): c for c in Compression}

# --- snappy: xerial framing -----------------------------------------------------------------

_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = _XERIAL_MAGIC + struct.pack(">ii", 1, 1)
_XERIAL_BLOCK_SIZE = 32 * 1024  # snappy-java's SnappyOutputStream.DEFAULT_BLOCK_SIZE
_INT32_BE = struct.Struct(">i")


def _snappy_compress(data: bytes) -> bytes:
    if not data:
        # SnappyOutputStream writes its header lazily, with the first block: empty in, empty out.
        return b""
    out = bytearray(_XERIAL_HEADER)
    view = memoryview(data)
    for start in range(0, len(data), _XERIAL_BLOCK_SIZE):
        block = bytes(cramjam.snappy.compress_raw(view[start : start + _XERIAL_BLOCK_SIZE]))
        out += _INT32_BE.pack(len(block))
        out += block
    return bytes(out)


# A raw snappy element expands at most 64/3-fold (a 3-byte copy of 64 bytes).
_SNAPPY_MAX_EXPANSION = 22


def _snappy_raw(block: bytes | memoryview) -> bytes:
    # The block starts with its uncompressed length (an unsigned varint); the decoder allocates
    # that much up front, and a native allocation failure aborts the process. Refuse lengths
    # the block cannot possibly expand to before handing it over.
    claimed = 0
    for i in range(min(5, len(block))):
        byte = block[i]
        claimed |= (byte & 0x7F) << (7 * i)
        if not byte & 0x80:
            break
    else:
        raise CorruptRecordError("snappy: bad uncompressed length preamble")
    if claimed > _SNAPPY_MAX_EXPANSION * len(block):
        raise CorruptRecordError(
            f"snappy: a block of {len(block)} bytes cannot expand to {claimed} bytes"
        )
    return bytes(cramjam.snappy.decompress_raw(block))


def _snappy_decompress(data: bytes) -> bytes:
    if not data:
        return b""  # what _snappy_compress writes for no input
    if not data.startswith(_XERIAL_MAGIC):
        # No xerial header: SnappyInputStream falls back to reading one raw snappy block.
        return _snappy_raw(data)
    if len(data) < len(_XERIAL_HEADER):
        raise CorruptRecordError("snappy: truncated xerial header")
    out = bytearray()
    pos = len(_XERIAL_HEADER)
    end = len(data)
    view = memoryview(data)
    while pos < end:
        if end - pos < 4:
            raise CorruptRecordError(f"snappy: truncated block length at byte {pos}")
        (size,) = _INT32_BE.unpack_from(data, pos)
        pos += 4
        if size < 0 or size > end - pos:
            raise CorruptRecordError(f"snappy: block of {size} bytes at byte {pos} overruns input")
        out += _snappy_raw(view[pos : pos + size])
        pos += size
    return bytes(out)


# --- lz4: Kafka's LZ4 frame ------------------------------------------------------------------

_LZ4_MAGIC = b"\x04\x22\x4d\x18"
# FLG 0x60 = version 01, block independence; BD 0x40 = 64 KiB blocks; 0x82 is the second byte
# of xxHash32(b"\x60\x40", seed 0), the header checksum the frame format requires.
_LZ4_HEADER = _LZ4_MAGIC + b"\x60\x40\x82"
_LZ4_BLOCK_SIZE = 64 * 1024
_LZ4_UNCOMPRESSED = 0x80000000
_UINT32_LE = struct.Struct("<I")
_LZ4_END_MARK = _UINT32_LE.pack(0)


def _lz4_compress(data: bytes, level: int | None = None) -> bytes:
    out = bytearray(_LZ4_HEADER)
    view = memoryview(data)
    # Kafka's lz4 levels (KIP-390): 1 the fast compressor, above it LZ4 HC at that level
    high = level is not None and level > 1
    for start in range(0, len(data), _LZ4_BLOCK_SIZE):
        chunk = view[start : start + _LZ4_BLOCK_SIZE]
        if high:
            block = cramjam.lz4.compress_block(
                chunk, store_size=False, mode="high_compression", compression=level
            )
        else:
            block = cramjam.lz4.compress_block(chunk, store_size=False)
        if len(block) >= len(chunk):
            # Incompressible: store the block as is, flagged by the size's high bit.
            out += _UINT32_LE.pack(len(chunk) | _LZ4_UNCOMPRESSED)
            out += chunk
        else:
            out += _UINT32_LE.pack(len(block))
            out += block
    out += _LZ4_END_MARK
    return bytes(out)


def _lz4_decompress(data: bytes) -> bytes:
    if len(data) < 7 or not data.startswith(_LZ4_MAGIC):
        raise CorruptRecordError("lz4: not an LZ4 frame (bad magic)")
    if not data[4] & 0x20:
        raise CorruptRecordError("lz4: dependent (linked) blocks are unsupported")
    return bytes(cramjam.lz4.decompress(data))


# --- dispatch ---------------------------------------------------------------------------------


def compress(codec: Compression, data: bytes, level: int | None = None) -> bytes:
    """``data`` compressed with ``codec`` in Kafka's framing (the module docstring gives them).

    ``level`` is the codec's level as Kafka's ``compression.<codec>.level`` configs take it
    (KIP-390: gzip 1-9 or -1, lz4 1-17, zstd -131072-22; snappy has none); ``None`` keeps the
    library's default. ``Compression.NONE`` returns ``data`` unchanged. Raises
    :class:`~odradek.errors.UnsupportedCompressionTypeError` if ``codec`` is not a
    :class:`Compression`.
    """
    if codec == Compression.NONE:
        return bytes(data)
    if codec == Compression.GZIP:
        if level is None or level < 0:  # -1: zlib's default (6), as java.util.zip
            return bytes(cramjam.gzip.compress(data))
        return bytes(cramjam.gzip.compress(data, level=level))
    if codec == Compression.SNAPPY:
        return _snappy_compress(data)
    if codec == Compression.LZ4:
        return _lz4_compress(data, level)
    if codec == Compression.ZSTD:
        if level is None:
            return bytes(cramjam.zstd.compress(data))
        return bytes(cramjam.zstd.compress(data, level=level))
    raise UnsupportedCompressionTypeError(f"unknown compression codec {codec!r}")


def decompress(codec: Compression, data: bytes | bytearray | memoryview) -> bytes:
    """The bytes ``data`` decompresses to with ``codec``.

    Raises :class:`~odradek.errors.CorruptRecordError` if ``data`` is not a valid stream of that
    codec (truncated, bad checksum, wrong framing), and
    :class:`~odradek.errors.UnsupportedCompressionTypeError` if ``codec`` is not a
    :class:`Compression`.
    """
    raw = bytes(data)
    if codec == Compression.NONE:
        return raw
    try:
        if codec == Compression.GZIP:
            return bytes(cramjam.gzip.decompress(raw))
        if codec == Compression.SNAPPY:
            return _snappy_decompress(raw)
        if codec == Compression.LZ4:
            return _lz4_decompress(raw)
        if codec == Compression.ZSTD:
            return bytes(cramjam.zstd.decompress(raw))
    except CorruptRecordError:
        raise
    except Exception as exc:
        # cramjam raises cramjam.DecompressionError, but a malformed stream can also surface as
        # ValueError/OverflowError from the bindings; all of them mean the payload is corrupt.
        name = Compression(codec).label
        raise CorruptRecordError(f"{name}: cannot decompress records: {exc}") from exc
    raise UnsupportedCompressionTypeError(f"unknown compression codec {codec!r}")
