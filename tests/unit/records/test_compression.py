import struct

import cramjam
import lz4.block
import lz4.frame
import pytest

from odradek.errors import CorruptRecordError, UnsupportedCompressionTypeError
from odradek.records import Compression, TimestampType, compress, decompress

PAYLOADS = [
    b"",
    b"x",
    b"hello kafka " * 50,
    bytes(range(256)) * 700,  # > 128 KiB: several snappy and lz4 blocks
    bytes((i * 7919) % 251 for i in range(70000)),  # poorly compressible
]


def test_enum_values_and_labels():
    assert [int(c) for c in Compression] == [0, 1, 2, 3, 4]
    assert [c.label for c in Compression] == ["none", "gzip", "snappy", "lz4", "zstd"]
    assert int(TimestampType.CREATE_TIME) == 0
    assert int(TimestampType.LOG_APPEND_TIME) == 1
    assert TimestampType.LOG_APPEND_TIME.label == "log_append_time"


@pytest.mark.parametrize("name", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_from_name(name):
    assert Compression.from_name(name).label == name
    assert Compression.from_name(name.upper()) is Compression.from_name(name)


@pytest.mark.parametrize("name", ["", "brotli", "lz4 ", "producer", "0"])
def test_from_name_rejects(name):
    with pytest.raises(UnsupportedCompressionTypeError) as info:
        Compression.from_name(name)
    assert info.value.code == 76


def test_timestamp_type_from_name():
    assert TimestampType.from_name("create_time") is TimestampType.CREATE_TIME
    assert TimestampType.from_name("LOG_APPEND_TIME") is TimestampType.LOG_APPEND_TIME
    assert TimestampType.from_name("LogAppendTime") is TimestampType.LOG_APPEND_TIME
    with pytest.raises(ValueError):
        TimestampType.from_name("append")


@pytest.mark.parametrize("codec", list(Compression))
@pytest.mark.parametrize("payload", PAYLOADS, ids=lambda p: f"{len(p)}B")
def test_round_trip(codec, payload):
    assert decompress(codec, compress(codec, payload)) == payload


def test_gzip_framing():
    out = compress(Compression.GZIP, b"abc" * 100)
    assert out[:3] == b"\x1f\x8b\x08"


def test_snappy_xerial_framing():
    data = bytes(range(256)) * 300  # 76800 bytes: blocks of 32768, 32768, 11264
    out = compress(Compression.SNAPPY, data)
    assert out[:16] == b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
    pos, blocks = 16, []
    while pos < len(out):
        (size,) = struct.unpack_from(">i", out, pos)
        blocks.append(bytes(cramjam.snappy.decompress_raw(out[pos + 4 : pos + 4 + size])))
        pos += 4 + size
    assert [len(b) for b in blocks] == [32768, 32768, 11264]
    assert b"".join(blocks) == data


def test_snappy_accepts_raw_snappy():
    raw = bytes(cramjam.snappy.compress_raw(b"plain raw snappy" * 10))
    assert decompress(Compression.SNAPPY, raw) == b"plain raw snappy" * 10


def test_lz4_framing_matches_kafka():
    data = bytes(range(256)) * 300  # two 64 KiB-limited blocks
    out = compress(Compression.LZ4, data)
    # magic, FLG 0x60 (v1, independent blocks, no checksums, no size), BD 0x40 (64 KiB), HC
    assert out[:7] == b"\x04\x22\x4d\x18\x60\x40\x82"
    assert out[-4:] == b"\x00\x00\x00\x00"
    pos, total = 7, 0
    while True:
        (size,) = struct.unpack_from("<I", out, pos)
        pos += 4
        if size == 0:
            break
        stored = size & 0x7FFFFFFF
        if size & 0x80000000:
            total += stored
        else:
            block = out[pos : pos + stored]
            total += len(lz4.block.decompress(block, uncompressed_size=65536))
        pos += stored
    assert pos == len(out)
    assert total == len(data)


def test_lz4_stores_incompressible_blocks_uncompressed():
    data = bytes((i * 7919 + i // 3) % 256 for i in range(1000))
    block = bytes(cramjam.lz4.compress_block(data, store_size=False))
    out = compress(Compression.LZ4, data)
    (size,) = struct.unpack_from("<I", out, 7)
    if len(block) >= len(data):
        assert size == 0x80000000 | len(data)
        assert out[11 : 11 + len(data)] == data
    assert decompress(Compression.LZ4, out) == data


def test_lz4_accepts_other_frames_but_not_linked_blocks():
    data = b"abcdefgh" * 5000
    with_size = lz4.frame.compress(data, block_linked=False, store_size=True, content_checksum=True)
    assert decompress(Compression.LZ4, with_size) == data
    linked = lz4.frame.compress(data * 3, block_linked=True)  # > 64 KiB: several blocks
    assert not linked[4] & 0x20
    with pytest.raises(CorruptRecordError, match="linked"):
        decompress(Compression.LZ4, linked)


def test_zstd_framing():
    assert compress(Compression.ZSTD, b"abc" * 10)[:4] == b"\x28\xb5\x2f\xfd"


@pytest.mark.parametrize("codec", [c for c in Compression if c is not Compression.NONE])
@pytest.mark.parametrize(
    "mangle",
    [
        lambda b: b[: len(b) // 2],
        lambda b: b[:5] + bytes(x ^ 0x5A for x in b[5:]),
        lambda b: b"\x00garbage\xff" * 3,
        lambda b: b"",
    ],
    ids=["truncated", "scrambled", "garbage", "empty"],
)
def test_corrupt_input_raises_corrupt_record_error(codec, mangle):
    good = compress(codec, b"some records, repeated. " * 40)
    bad = mangle(good)
    try:
        out = decompress(codec, bad)
    except CorruptRecordError as exc:
        assert exc.code == 2
    else:
        # A few codecs decode an empty input to nothing; nothing else may silently pass.
        assert bad == b"" and out == b""


def test_snappy_refuses_impossible_lengths_before_allocating():
    # A raw block claiming 4 GiB of output: the native decoder would abort the process.
    with pytest.raises(CorruptRecordError, match="cannot expand"):
        decompress(Compression.SNAPPY, b"\xff\xff\xff\xff\x0f" + b"\x00" * 20)
    framed = b"\x82SNAPPY\x00" + struct.pack(">iii", 1, 1, 6) + b"\xff\xff\xff\xff\x0f\x00"
    with pytest.raises(CorruptRecordError):
        decompress(Compression.SNAPPY, framed)
    with pytest.raises(CorruptRecordError):
        decompress(Compression.SNAPPY, b"\x82SNAPPY\x00" + struct.pack(">iii", 1, 1, 999) + b"x")


def test_unknown_codec():
    with pytest.raises(UnsupportedCompressionTypeError):
        compress(7, b"x")  # type: ignore[arg-type]
    with pytest.raises(UnsupportedCompressionTypeError):
        decompress(7, b"x")  # type: ignore[arg-type]
