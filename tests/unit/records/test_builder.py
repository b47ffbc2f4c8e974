import struct
from typing import Any

import crc32c
import pytest

from odradek.errors import UnsupportedCompressionTypeError
from odradek.records import (
    Compression,
    Record,
    RecordBatch,
    TimestampType,
    build_batch,
)

from .helpers import RECORDS, expected

HEADER = struct.Struct(">qiibIhiqqqhii")


def test_known_vector_byte_for_byte():
    records = [
        Record(b"k", b"v", timestamp=1000),
        Record(None, b"vv", headers=[("h", b"x")], timestamp=1003),
        Record(b"key", None, timestamp=998),
    ]
    out = build_batch(
        records,
        base_offset=42,
        producer_id=7,
        producer_epoch=3,
        base_sequence=11,
        partition_leader_epoch=5,
    )
    # Records, by hand from the layout (zig-zag varints):
    #   len=8:  attrs 0, ts +0, offset 0, key len 1 "k", value len 1 "v", 0 headers
    #   len=12: attrs 0, ts +3 (06), offset 1 (02), key null (01), value len 2 "vv",
    #           1 header (02): key len 1 "h", value len 1 "x"
    #   len=9:  attrs 0, ts -2 (03), offset 2 (04), key len 3 "key", value null (01), 0 headers
    expected_records = (
        b"\x10\x00\x00\x00\x02k\x02v\x00"
        + b"\x18\x00\x06\x02\x01\x04vv\x02\x02h\x02x"
        + b"\x12\x00\x03\x04\x06key\x01\x00"
    )
    assert out[61:] == expected_records
    fields = HEADER.unpack_from(out)
    assert (
        fields
        == (
            42,  # base offset
            len(out) - 12,  # length
            5,  # partition leader epoch
            2,  # magic
            crc32c.crc32c(out[21:]),  # CRC-32C of attributes..end
            0,  # attributes: no compression, create time
            2,  # last offset delta
            1000,  # base timestamp: the first record's
            1003,  # max timestamp
            7,
            3,
            11,
            3,  # records count
        )
    )
    assert len(out) == 61 + len(expected_records)


def test_attribute_bits():
    def attributes(**kwargs: Any) -> int:
        out = build_batch([Record(b"k", b"v")], **kwargs)
        return int(struct.unpack_from(">h", out, 21)[0])

    assert attributes() == 0
    assert attributes(compression="gzip") == 1
    assert attributes(compression=Compression.ZSTD) == 4
    assert attributes(timestamp_type="log_append_time") == 0x08
    assert attributes(timestamp_type=TimestampType.LOG_APPEND_TIME, compression="lz4") == 0x0B
    assert (
        attributes(is_transactional=True, producer_id=1, producer_epoch=0, base_sequence=0) == 0x10
    )
    assert attributes(is_control=True) == 0x20
    assert attributes(delete_horizon_ms=0) == 0x40


def test_defaults_are_kafkas_no_values():
    b = RecordBatch(build_batch([Record(b"k", b"v")]))
    assert (b.base_offset, b.partition_leader_epoch) == (0, -1)
    assert (b.producer_id, b.producer_epoch, b.base_sequence) == (-1, -1, -1)
    assert (b.base_timestamp, b.max_timestamp) == (-1, -1)
    assert b.records()[0].timestamp is None


def test_delete_horizon_is_the_base_timestamp_and_deltas_are_relative_to_it():
    records = [Record(b"a", None, timestamp=1000), Record(b"b", b"x", timestamp=2500)]
    out = build_batch(records, delete_horizon_ms=5000)
    b = RecordBatch(out)
    b.validate()
    assert b.has_delete_horizon
    assert b.delete_horizon_ms == 5000 == b.base_timestamp
    assert b.max_timestamp == 2500
    # First record: timestamp delta 1000 - 5000 = -4000, zig-zag 7999 = b"\xbf\x3e".
    assert out[61 + 2 : 61 + 4] == b"\xbf\x3e"
    assert [r.timestamp for r in b.records()] == [1000, 2500]
    plain = RecordBatch(build_batch(records))
    assert not plain.has_delete_horizon and plain.delete_horizon_ms is None


def test_log_append_time_batch():
    records = [Record(b"a", b"1", timestamp=777), Record(b"b", b"2", timestamp=777)]
    b = RecordBatch(build_batch(records, timestamp_type="log_append_time"))
    assert b.timestamp_type is TimestampType.LOG_APPEND_TIME
    assert b.max_timestamp == 777
    assert [r.timestamp for r in b.records()] == [777, 777]


@pytest.mark.parametrize("codec", list(Compression))
def test_round_trip_every_codec(codec):
    b = RecordBatch(build_batch(RECORDS, base_offset=100, compression=codec.label))
    b.validate()
    assert b.compression is codec
    assert b.records() == expected(RECORDS, 100)
    assert b.max_timestamp == 1_700_000_000_005
    assert b.base_timestamp == 1_700_000_000_000


def test_compression_shrinks_compressible_records():
    records = [Record(None, b"the same value again " * 20) for _ in range(50)]
    assert len(build_batch(records, compression="zstd")) < len(build_batch(records)) // 5


def test_accepts_any_iterable():
    out = build_batch(Record(str(i).encode(), None) for i in range(3))
    assert [r.key for r in RecordBatch(out).records()] == [b"0", b"1", b"2"]


def test_rejections():
    with pytest.raises(ValueError):
        build_batch([])
    with pytest.raises(UnsupportedCompressionTypeError):
        build_batch([Record(b"k", b"v")], compression="brotli")
    with pytest.raises(UnsupportedCompressionTypeError):
        build_batch([Record(b"k", b"v")], compression=6)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        build_batch([Record(b"k", b"v")], timestamp_type="wall_clock")
    with pytest.raises(ValueError):
        build_batch([Record(b"k", b"v", timestamp=-2)])
    with pytest.raises(ValueError):
        build_batch([Record(b"k", b"v")], delete_horizon_ms=-1)
    with pytest.raises(ValueError):
        build_batch([Record(b"k", b"v")], partition_leader_epoch=2**31)
    with pytest.raises(ValueError):
        build_batch([Record(b"k", b"v")], producer_epoch=2**15)
    # Kafka's MemoryRecordsBuilder producer-state rules.
    with pytest.raises(ValueError, match="transactional"):
        build_batch([Record(b"k", b"v")], is_transactional=True)
    with pytest.raises(ValueError, match="epoch"):
        build_batch([Record(b"k", b"v")], producer_id=5, base_sequence=0)
    with pytest.raises(ValueError, match="sequence"):
        build_batch([Record(b"k", b"v")], producer_id=5, producer_epoch=0)
    build_batch([Record(b"k", b"v")], producer_id=5, producer_epoch=0, is_control=True)
    with pytest.raises(TypeError):
        build_batch([Record(b"k", b"v", headers=[(b"bytes-key", b"v")])])  # type: ignore[list-item]
    with pytest.raises(TypeError):
        build_batch([Record("str key", b"v")])  # type: ignore[arg-type]
