"""Zig-zag varints, as Kafka's ``ByteUtils`` writes them inside v2 records.

Format: a signed integer ``n`` is first zig-zag mapped to an unsigned one
(``0→0, -1→1, 1→2, -2→3, …``: ``(n << 1) ^ (n >> 63)``) so that small magnitudes of either sign
stay short, then written little-endian in groups of 7 bits, the high bit of each byte set when
another byte follows (the protobuf "varint"). A *varint* carries an int32 (at most 5 bytes), a
*varlong* an int64 (at most 10 bytes).

Decoding mirrors ``ByteUtils.readVarint``/``readVarlong``: more than 5 (10) bytes is an error,
and bits beyond 32 (64) in the last byte are dropped, as Java's fixed-width arithmetic does.

Encoders raise ``ValueError`` for values outside the type's range; decoders read untrusted bytes
and raise :class:`~odradek.errors.CorruptRecordError` for a truncated or over-long varint.
All functions are pure and thread-safe.
"""

from __future__ import annotations

from odradek.errors import CorruptRecordError

__all__ = [
    "INT32_MIN",
    "INT32_MAX",
    "INT64_MIN",
    "INT64_MAX",
    "zigzag_encode",
    "zigzag_decode",
    "encode_varint",
    "encode_varlong",
    "write_varint",
    "write_varlong",
    "decode_varint",
    "decode_varlong",
    "size_of_varint",
    "size_of_varlong",
]

INT32_MIN = -(1 << 31)
INT32_MAX = (1 << 31) - 1
INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1

_MASK32 = (1 << 32) - 1
_MASK64 = (1 << 64) - 1

# Encodings of the zig-zag values 0 .. 2**14 - 1 (one or two bytes), precomputed: offset deltas,
# timestamp deltas and key/value lengths of ordinary records all land here, so the builder's
# inner loop is a list index instead of a Python loop.
_TABLE_LIMIT = 1 << 14


def _encode_unsigned(u: int) -> bytes:
    out = bytearray()
    while u > 0x7F:
        out.append((u & 0x7F) | 0x80)
        u >>= 7
    out.append(u)
    return bytes(out)


_SMALL: list[bytes] = [_encode_unsigned(u) for u in range(_TABLE_LIMIT)]


def zigzag_encode(value: int) -> int:
    """Map a signed int64 onto an unsigned one: ``0→0, -1→1, 1→2, -2→3``.

    Raises ``ValueError`` if ``value`` is outside the int64 range.
    """
    if not INT64_MIN <= value <= INT64_MAX:
        raise ValueError(f"{value} does not fit in an int64")
    return ((value << 1) ^ (value >> 63)) & _MASK64


def zigzag_decode(unsigned: int) -> int:
    """The inverse of :func:`zigzag_encode`."""
    return (unsigned >> 1) ^ -(unsigned & 1)


def encode_varint(value: int) -> bytes:
    """The zig-zag varint encoding of an int32 (1 to 5 bytes).

    Raises ``ValueError`` if ``value`` is outside the int32 range.
    """
    if not INT32_MIN <= value <= INT32_MAX:
        raise ValueError(f"{value} does not fit in an int32 varint")
    u = (value << 1) ^ (value >> 63)
    if u < _TABLE_LIMIT:
        return _SMALL[u]
    return _encode_unsigned(u)


def encode_varlong(value: int) -> bytes:
    """The zig-zag varlong encoding of an int64 (1 to 10 bytes).

    Raises ``ValueError`` if ``value`` is outside the int64 range.
    """
    u = zigzag_encode(value)
    if u < _TABLE_LIMIT:
        return _SMALL[u]
    return _encode_unsigned(u)


def write_varint(out: bytearray, value: int) -> None:
    """Append :func:`encode_varint` of ``value`` to ``out``. Raises ``ValueError`` like it."""
    out += encode_varint(value)


def write_varlong(out: bytearray, value: int) -> None:
    """Append :func:`encode_varlong` of ``value`` to ``out``. Raises ``ValueError`` like it."""
    out += encode_varlong(value)


def size_of_varint(value: int) -> int:
    """How many bytes :func:`encode_varint` writes for ``value``. Raises ``ValueError`` like it."""
    return len(encode_varint(value))


def size_of_varlong(value: int) -> int:
    """How many bytes :func:`encode_varlong` writes for ``value``. Raises ``ValueError`` like it."""
    return len(encode_varlong(value))


def _decode(
    buf: bytes | bytearray | memoryview, pos: int, max_bytes: int, mask: int
) -> tuple[int, int]:
    raw = 0
    shift = 0
    end = len(buf)
    for _ in range(max_bytes):
        if pos >= end:
            raise CorruptRecordError(f"varint truncated at byte {pos}")
        b = buf[pos]
        pos += 1
        raw |= (b & 0x7F) << shift
        if not b & 0x80:
            return zigzag_decode(raw & mask), pos
        shift += 7
    raise CorruptRecordError(f"varint longer than {max_bytes} bytes ending at byte {pos}")


def decode_varint(buf: bytes | bytearray | memoryview, pos: int = 0) -> tuple[int, int]:
    """Read a zig-zag varint (int32) at ``buf[pos]``; return ``(value, position after it)``.

    Raises :class:`~odradek.errors.CorruptRecordError` if the varint runs past the end of
    ``buf`` or is longer than 5 bytes.
    """
    return _decode(buf, pos, 5, _MASK32)


def decode_varlong(buf: bytes | bytearray | memoryview, pos: int = 0) -> tuple[int, int]:
    """Read a zig-zag varlong (int64) at ``buf[pos]``; return ``(value, position after it)``.

    Raises :class:`~odradek.errors.CorruptRecordError` if the varlong runs past the end of
    ``buf`` or is longer than 10 bytes.
    """
    return _decode(buf, pos, 10, _MASK64)
