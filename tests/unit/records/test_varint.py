import pytest

from odradek.errors import CorruptRecordError
from odradek.records.varint import (
    INT32_MAX,
    INT32_MIN,
    INT64_MAX,
    INT64_MIN,
    decode_varint,
    decode_varlong,
    encode_varint,
    encode_varlong,
    size_of_varint,
    size_of_varlong,
    write_varint,
    zigzag_decode,
    zigzag_encode,
)


@pytest.mark.parametrize(
    ("value", "unsigned"),
    [
        (0, 0),
        (-1, 1),
        (1, 2),
        (-2, 3),
        (2, 4),
        (INT32_MAX, 2**32 - 2),
        (INT32_MIN, 2**32 - 1),
        (INT64_MAX, 2**64 - 2),
        (INT64_MIN, 2**64 - 1),
    ],
)
def test_zigzag_known_values(value, unsigned):
    assert zigzag_encode(value) == unsigned
    assert zigzag_decode(unsigned) == value


@pytest.mark.parametrize(
    ("value", "encoded"),
    [
        (0, b"\x00"),
        (-1, b"\x01"),
        (1, b"\x02"),
        (63, b"\x7e"),
        (-64, b"\x7f"),
        (64, b"\x80\x01"),
        (150, b"\xac\x02"),
        (300, b"\xd8\x04"),
        (-300, b"\xd7\x04"),
        (8191, b"\xfe\x7f"),
        (8192, b"\x80\x80\x01"),  # past the precomputed table
        (INT32_MAX, b"\xfe\xff\xff\xff\x0f"),
        (INT32_MIN, b"\xff\xff\xff\xff\x0f"),
    ],
)
def test_varint_known_vectors(value, encoded):
    assert encode_varint(value) == encoded
    assert encode_varlong(value) == encoded
    assert decode_varint(encoded) == (value, len(encoded))
    assert decode_varlong(encoded) == (value, len(encoded))
    assert size_of_varint(value) == len(encoded)


def test_varlong_extremes():
    assert encode_varlong(INT64_MAX) == b"\xfe" + b"\xff" * 8 + b"\x01"
    assert encode_varlong(INT64_MIN) == b"\xff" * 9 + b"\x01"
    assert size_of_varlong(INT64_MIN) == 10
    for value in (INT64_MAX, INT64_MIN, 2**40, -(2**40), 1234567890123):
        assert decode_varlong(encode_varlong(value)) == (value, len(encode_varlong(value)))


def test_round_trip_many_values_at_an_offset():
    values = [*range(-20000, 20000, 7), INT32_MAX, INT32_MIN, 2**20, -(2**28)]
    buf = bytearray(b"junk")
    for v in values:
        write_varint(buf, v)
    pos = 4
    for v in values:
        got, pos = decode_varint(buf, pos)
        assert got == v
    assert pos == len(buf)


def test_encode_out_of_range():
    with pytest.raises(ValueError):
        encode_varint(INT32_MAX + 1)
    with pytest.raises(ValueError):
        encode_varint(INT32_MIN - 1)
    with pytest.raises(ValueError):
        encode_varlong(INT64_MAX + 1)
    with pytest.raises(ValueError):
        zigzag_encode(INT64_MIN - 1)


def test_decode_truncated_and_overlong():
    with pytest.raises(CorruptRecordError):
        decode_varint(b"")
    with pytest.raises(CorruptRecordError):
        decode_varint(b"\x80\x80")
    with pytest.raises(CorruptRecordError):
        decode_varint(b"\x80\x80\x80\x80\x80\x00")  # 6 bytes: too long for a varint
    assert decode_varlong(b"\x80\x80\x80\x80\x80\x00") == (0, 6)  # fine for a varlong
    with pytest.raises(CorruptRecordError):
        decode_varlong(b"\x80" * 10 + b"\x00")


def test_decode_drops_bits_beyond_32_like_java():
    # Java's int arithmetic keeps the low 32 bits of the 5th byte's contribution.
    assert decode_varint(b"\xfe\xff\xff\xff\x7f") == (INT32_MAX, 5)
