import mmap
import struct

import crc32c
import pytest

from odradek.errors import CorruptRecordError
from odradek.records import (
    ATTRIBUTES_OFFSET,
    BASE_OFFSET_OFFSET,
    CRC_OFFSET,
    LENGTH_OFFSET,
    MAGIC_OFFSET,
    MAX_TIMESTAMP_OFFSET,
    PARTITION_LEADER_EPOCH_OFFSET,
    RECORD_BATCH_OVERHEAD,
    Compression,
    Record,
    RecordBatch,
    TimestampType,
    batch_size_at,
    build_batch,
    read_batches,
    set_base_offset,
    set_log_append_time,
    set_partition_leader_epoch,
    stamp_batch,
    validated_headers,
)

from .helpers import RECORDS, expected


def three_batches() -> tuple[bytes, bytes, bytes]:
    a = build_batch(RECORDS[:2], base_offset=0)
    b = build_batch(RECORDS[2:3], base_offset=2, compression="gzip")
    c = build_batch(RECORDS[3:], base_offset=3, compression="lz4")
    return a, b, c


def fix_crc(buf: bytearray, position: int = 0) -> None:
    size = struct.unpack_from(">i", buf, position + LENGTH_OFFSET)[0] + 12
    crc = crc32c.crc32c(bytes(buf[position + ATTRIBUTES_OFFSET : position + size]))
    struct.pack_into(">I", buf, position + CRC_OFFSET, crc)


# --- the view ---------------------------------------------------------------------------------


def test_header_properties():
    out = build_batch(
        RECORDS,
        base_offset=1000,
        compression="snappy",
        producer_id=99,
        producer_epoch=4,
        base_sequence=17,
        partition_leader_epoch=8,
        is_transactional=True,
    )
    b = RecordBatch(out)
    assert b.position == 0
    assert b.base_offset == 1000
    assert b.length == len(out) - 12
    assert b.size_in_bytes == len(out)
    assert b.partition_leader_epoch == 8
    assert b.magic == 2
    assert b.crc == struct.unpack_from(">I", out, 17)[0] == b.compute_crc()
    assert b.attributes == 0x12
    assert b.compression is Compression.SNAPPY
    assert b.timestamp_type is TimestampType.CREATE_TIME
    assert b.is_transactional and not b.is_control and not b.has_delete_horizon
    assert b.last_offset_delta == 4
    assert (b.last_offset, b.next_offset) == (1004, 1005)
    assert (b.producer_id, b.producer_epoch, b.base_sequence) == (99, 4, 17)
    assert b.records_count == 5
    assert b.base_timestamp == 1_700_000_000_000
    assert b.max_timestamp == 1_700_000_000_005
    assert "offsets=[1000, 1004]" in repr(b)


@pytest.mark.parametrize("kind", ["bytes", "bytearray", "memoryview", "mmap"])
def test_view_over_every_buffer_type_at_a_position(kind, tmp_path):
    a, b, c = three_batches()
    data = b"\x00" * 5 + a + b + c
    buf: bytes | bytearray | memoryview | mmap.mmap
    if kind == "bytes":
        buf = data
    elif kind == "bytearray":
        buf = bytearray(data)
    elif kind == "memoryview":
        buf = memoryview(bytearray(data))
    else:
        path = tmp_path / "segment.log"
        path.write_bytes(data)
        with open(path, "rb") as f:
            buf = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    batch = RecordBatch(buf, 5 + len(a))
    batch.validate()
    assert batch.position == 5 + len(a)
    assert batch.buffer().tobytes() == b
    assert batch.records() == expected(RECORDS[2:3], 2)
    assert [x.base_offset for x in read_batches(buf, 5)] == [0, 2, 3]
    if isinstance(buf, mmap.mmap):
        with pytest.raises(TypeError):
            set_base_offset(buf, 5, 1)  # mapped read-only
        buf.close()


def test_buffer_is_a_view_not_a_copy():
    buf = bytearray(build_batch(RECORDS))
    view = RecordBatch(buf).buffer()
    assert len(view) == len(buf)
    buf[70] ^= 0xFF
    assert view[70] == buf[70]
    view.release()
    buf.extend(b"more")  # released: the bytearray can be resized again


def test_validate_leaves_the_bytearray_resizable():
    buf = bytearray(build_batch(RECORDS))
    batch = RecordBatch(buf)
    batch.validate()
    batch.records()
    buf.extend(b"x")


def test_constructor_errors():
    with pytest.raises(ValueError):
        RecordBatch(build_batch(RECORDS), -1)
    with pytest.raises(CorruptRecordError):
        RecordBatch(b"\x00" * 60)


@pytest.mark.parametrize("codec", list(Compression))
def test_records_of_every_codec(codec):
    b = RecordBatch(build_batch(RECORDS, base_offset=7, compression=codec))
    assert b.records() == expected(RECORDS, 7)


def test_null_key_tombstone_empty_values_and_headers():
    records = RecordBatch(build_batch(RECORDS)).records()
    assert records[1].key is None
    assert records[2].value is None  # a tombstone
    assert (records[3].key, records[3].value) == (b"", b"")
    assert records[3].headers == (("h\u00e9llo-\u4e16\u754c", None), ("x", b""))
    assert records[3].timestamp is None


# --- validate ---------------------------------------------------------------------------------


def test_validate_passes_on_a_built_batch():
    b = RecordBatch(build_batch(RECORDS))
    b.validate()
    assert b.is_valid()


@pytest.mark.parametrize("where", [ATTRIBUTES_OFFSET, ATTRIBUTES_OFFSET + 1, 30, 61, 62, -1])
def test_validate_catches_a_flipped_byte_inside_the_crc(where):
    buf = bytearray(build_batch(RECORDS, compression="zstd"))
    buf[where] ^= 0x01
    b = RecordBatch(buf)
    assert not b.is_valid()
    with pytest.raises(CorruptRecordError, match=r"stored crc = \d+, computed crc = \d+"):
        b.validate()


def test_validate_catches_a_changed_crc():
    buf = bytearray(build_batch(RECORDS))
    buf[CRC_OFFSET + 2] ^= 0x40
    with pytest.raises(CorruptRecordError, match="crc"):
        RecordBatch(buf).validate()


def test_validate_catches_magic():
    buf = bytearray(build_batch(RECORDS))
    buf[MAGIC_OFFSET] = 1
    b = RecordBatch(buf)
    with pytest.raises(CorruptRecordError, match="magic 1"):
        b.validate()
    assert not b.is_valid()
    with pytest.raises(CorruptRecordError):
        b.records()


def test_validate_catches_small_size_and_overrun():
    buf = bytearray(build_batch(RECORDS))
    struct.pack_into(">i", buf, LENGTH_OFFSET, 40)  # 52 bytes < 61
    with pytest.raises(CorruptRecordError, match="smaller than the minimum"):
        RecordBatch(buf).validate()
    struct.pack_into(">i", buf, LENGTH_OFFSET, len(buf))  # 12 bytes too many
    with pytest.raises(CorruptRecordError, match="past the end"):
        RecordBatch(buf).validate()
    with pytest.raises(CorruptRecordError):
        RecordBatch(buf).records()
    with pytest.raises(CorruptRecordError):
        RecordBatch(buf).compute_crc()


def test_partition_leader_epoch_and_base_offset_are_outside_the_crc():
    buf = bytearray(build_batch(RECORDS))
    struct.pack_into(">q", buf, BASE_OFFSET_OFFSET, 123456)
    struct.pack_into(">i", buf, PARTITION_LEADER_EPOCH_OFFSET, 77)
    b = RecordBatch(buf)
    b.validate()
    assert (b.base_offset, b.partition_leader_epoch) == (123456, 77)


# --- in-place rewrites ------------------------------------------------------------------------


def test_set_base_offset_and_epoch_in_place():
    a, b, c = three_batches()
    buf = bytearray(a + b + c)
    before = bytes(buf)
    set_base_offset(buf, len(a), 5000)
    set_partition_leader_epoch(buf, len(a), 12)
    batches = list(read_batches(buf))
    for batch in batches:
        batch.validate()
    assert batches[1].base_offset == 5000 and batches[1].partition_leader_epoch == 12
    assert batches[1].records()[0].offset == 5000
    assert batches[1].crc == struct.unpack_from(">I", before, len(a) + CRC_OFFSET)[0]
    # Only bytes 0-7 and 12-15 of that batch changed.
    changed = [i - len(a) for i in range(len(buf)) if buf[i] != before[i]]
    assert set(changed) <= set(range(8)) | set(range(12, 16))


def test_set_log_append_time_keeps_the_crc_valid_and_stamps_records():
    records = [Record(b"a", b"1", timestamp=10), Record(b"b", b"2", timestamp=20)]
    prefix = build_batch(records)
    buf = bytearray(prefix + build_batch(records, base_offset=2, compression="lz4"))
    set_log_append_time(buf, len(prefix), 99_000)
    first, second = read_batches(buf)
    first.validate()
    second.validate()
    assert second.timestamp_type is TimestampType.LOG_APPEND_TIME
    assert second.max_timestamp == 99_000
    assert second.compression is Compression.LZ4
    assert [r.timestamp for r in second.records()] == [99_000, 99_000]
    assert [r.timestamp for r in first.records()] == [10, 20]
    assert struct.unpack_from(">q", buf, len(prefix) + MAX_TIMESTAMP_OFFSET)[0] == 99_000
    snapshot = bytes(buf)
    set_log_append_time(buf, len(prefix), 99_000)  # already so: nothing to do
    assert bytes(buf) == snapshot


def test_set_log_append_time_keeps_the_delete_horizon():
    buf = bytearray(build_batch([Record(b"a", None, timestamp=5)], delete_horizon_ms=50))
    set_log_append_time(buf, 0, 60)
    b = RecordBatch(buf)
    b.validate()
    assert b.delete_horizon_ms == 50
    assert b.attributes == 0x48


def test_rewrites_reject_bad_input():
    buf = bytearray(build_batch(RECORDS))
    with pytest.raises(ValueError):
        set_base_offset(buf, len(buf) - 10, 1)
    with pytest.raises(ValueError):
        set_base_offset(buf, -1, 1)
    with pytest.raises(ValueError):
        set_base_offset(buf, 0, 2**63)
    with pytest.raises(ValueError):
        set_partition_leader_epoch(buf, 0, 2**31)
    with pytest.raises(TypeError):
        set_partition_leader_epoch(bytes(buf), 0, 1)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        set_log_append_time(memoryview(bytes(buf)), 0, 1)
    buf[MAGIC_OFFSET] = 0
    with pytest.raises(CorruptRecordError):
        set_log_append_time(buf, 0, 1)


# --- read_batches -----------------------------------------------------------------------------


def test_read_batches_iterates_concatenated_batches():
    a, b, c = three_batches()
    buf = a + b + c
    batches = list(read_batches(buf))
    assert [x.position for x in batches] == [0, len(a), len(a) + len(b)]
    assert [x.buffer().tobytes() for x in batches] == [a, b, c]
    assert [r for x in batches for r in x.records()] == expected(RECORDS, 0)
    assert [x.base_offset for x in read_batches(buf, len(a))] == [2, 3]
    assert [x.base_offset for x in read_batches(buf, 0, len(a) + len(b))] == [0, 2]
    assert list(read_batches(buf, len(buf))) == []
    assert list(read_batches(b"")) == []
    assert [x.base_offset for x in read_batches(buf, 0, 10**9)] == [0, 2, 3]


def test_every_torn_tail_yields_just_the_earlier_batches():
    a, b, c = three_batches()
    for cut in range(len(c)):
        buf = a + b + c[:cut]
        assert [x.base_offset for x in read_batches(buf)] == [0, 2], cut
        assert [x.base_offset for x in read_batches(a + b + c, 0, len(buf))] == [0, 2], cut


def test_length_below_record_overhead_v0_raises():
    a = build_batch(RECORDS[:1])
    for length in (13, 0, -1, -(2**31)):
        tail = bytearray(a)
        struct.pack_into(">i", tail, LENGTH_OFFSET, length)
        batches = read_batches(a + tail)
        assert next(batches).base_offset == 0
        with pytest.raises(CorruptRecordError, match="minimum record overhead"):
            next(batches)


def test_length_of_14_is_accepted_by_the_scan_and_refused_by_validate():
    head = bytearray(RECORD_BATCH_OVERHEAD)
    struct.pack_into(">qiib", head, 0, 0, 14, 0, 2)
    batch = next(read_batches(bytes(head)))
    assert batch.size_in_bytes == 26
    with pytest.raises(CorruptRecordError, match="smaller than the minimum"):
        batch.validate()
    with pytest.raises(CorruptRecordError):
        batch.records()


def test_seventeen_bytes_or_fewer_stop_silently():
    garbage_header = struct.pack(">qi", 0, 5) + b"\x00\x00\x00\x00\x02"  # 17 bytes, length 5
    assert list(read_batches(garbage_header)) == []
    with pytest.raises(CorruptRecordError):
        list(read_batches(garbage_header + b"\x00"))  # 18 bytes: the length is read


def test_magic_other_than_2_raises():
    buf = bytearray(build_batch(RECORDS))
    buf[MAGIC_OFFSET] = 1
    with pytest.raises(CorruptRecordError, match="magic 1"):
        list(read_batches(buf))


@pytest.mark.parametrize("garbage", [b"\xff" * 100, b"\x00" * 100, b"\x00" * 11 + b"\x3d" * 89])
def test_garbage_raises_corrupt_record_error(garbage):
    with pytest.raises(CorruptRecordError):
        for batch in read_batches(garbage):
            batch.validate()


def test_garbage_with_a_huge_length_reads_as_a_torn_tail():
    # Length 0x08090a0b runs far past the end: Kafka's scan takes that for a partial batch.
    assert list(read_batches(bytes(range(100)))) == []


def test_read_batches_rejects_negative_start_at_once():
    with pytest.raises(ValueError):
        read_batches(b"", -1)


def test_batch_size_at():
    a, b, _ = three_batches()
    assert batch_size_at(a + b, 0) == len(a)
    assert batch_size_at(a + b, len(a)) == len(b)
    assert batch_size_at(a + b, len(a + b) - 11) is None
    with pytest.raises(ValueError):
        batch_size_at(a, -1)


# --- decoding corrupt content ------------------------------------------------------------------


@pytest.mark.parametrize("codec", [c for c in Compression if c is not Compression.NONE])
@pytest.mark.parametrize("payload", [b"\x00garbage\xff" * 5, b"", b"\x01"])
def test_corrupt_compressed_payload_with_a_valid_crc_raises(codec, payload):
    good = build_batch(RECORDS, compression=codec)
    buf = bytearray(good[:RECORD_BATCH_OVERHEAD] + payload)
    struct.pack_into(">i", buf, LENGTH_OFFSET, len(buf) - 12)
    fix_crc(buf)
    b = RecordBatch(buf)
    b.validate()  # the CRC is right: only decoding can tell
    with pytest.raises(CorruptRecordError):
        b.records()


@pytest.mark.parametrize("codec", [c for c in Compression if c is not Compression.NONE])
def test_truncated_compressed_payload_raises(codec):
    good = build_batch(RECORDS, compression=codec)
    buf = bytearray(good[: len(good) - 9])
    struct.pack_into(">i", buf, LENGTH_OFFSET, len(buf) - 12)
    fix_crc(buf)
    with pytest.raises(CorruptRecordError):
        RecordBatch(buf).records()


def with_records_section(section: bytes, count: int) -> RecordBatch:
    """An uncompressed batch with the given raw records section and RecordsCount, CRC fixed."""
    buf = bytearray(build_batch([Record(b"k", b"v")])[:RECORD_BATCH_OVERHEAD] + section)
    struct.pack_into(">i", buf, LENGTH_OFFSET, len(buf) - 12)
    struct.pack_into(">i", buf, 57, count)
    fix_crc(buf)
    return RecordBatch(buf)


ONE_RECORD = b"\x10\x00\x00\x00\x02k\x02v\x00"


@pytest.mark.parametrize(
    ("section", "count", "message"),
    [
        (ONE_RECORD, 2, "premature end"),
        (ONE_RECORD + b"\x00", 1, "remain after"),
        (ONE_RECORD, -1, "invalid record count"),
        (b"\x12\x00\x00\x00\x02k\x02v\x00", 1, "invalid record size"),  # length says 9
        (b"\x0e\x00\x00\x00\x02k\x02v\x00", 1, "invalid record size"),  # length says 7
        (b"\x01" + ONE_RECORD[1:], 1, "invalid record size"),  # negative length
        (b"\x10\x00\x00\x00\x02k\x02v\x01", 1, "invalid number of record headers"),
        (b"\x12\x00\x00\x00\x02k\x02v\x02\x01", 1, "negative header key size"),
        (b"\x14\x00\x00\x00\x02k\x02v\x02\x02\xff\x01", 1, "not UTF-8"),
        (b"\x10\x00\x00\x00\x0ek\x02v\x00", 1, "key overruns"),
        (b"\x10\x00\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80", 1, "varint"),
    ],
)
def test_malformed_records_raise_corrupt_record_error(section, count, message):
    b = with_records_section(section, count)
    b.validate()
    with pytest.raises(CorruptRecordError, match=message):
        b.records()


def test_unknown_codec_id_is_corrupt():
    buf = bytearray(build_batch(RECORDS))
    struct.pack_into(">h", buf, ATTRIBUTES_OFFSET, 6)
    fix_crc(buf)
    b = RecordBatch(buf)
    with pytest.raises(CorruptRecordError, match="unknown compression type id 6"):
        _ = b.compression
    with pytest.raises(CorruptRecordError):
        b.records()


def test_negative_key_and_value_lengths_read_as_null_like_kafka():
    # Kafka treats any negative key/value length as null, not only -1.
    b = with_records_section(b"\x0c\x00\x00\x00\x03\x05\x00", 1)  # key -2, value -3
    (record,) = b.records()
    assert (record.key, record.value) == (None, None)


def test_empty_batch_decodes_to_no_records():
    b = with_records_section(b"", 0)
    assert b.records() == []


# --- the broker's append path: validated_headers and stamp_batch ------------------------------


def _two_batches() -> bytes:
    first = build_batch([Record(b"a", b"1", timestamp=10), Record(b"b", b"2", timestamp=30)])
    second = build_batch([Record(None, b"3", timestamp=20)], compression="gzip")
    return first + second


def test_validated_headers_reads_every_header_field() -> None:
    data = _two_batches()
    headers = validated_headers(data)
    views = [RecordBatch(data, 0), RecordBatch(data, headers[0].size_in_bytes)]
    assert [h.position for h in headers] == [v.position for v in views]
    for h, v in zip(headers, views, strict=True):
        assert (h.size_in_bytes, h.crc, h.max_timestamp, h.records_count, h.last_offset) == (
            v.size_in_bytes,
            v.crc,
            v.max_timestamp,
            v.records_count,
            v.last_offset,
        )
    assert validated_headers(memoryview(data)) == headers
    assert validated_headers(b"") == []


def test_validated_headers_rejects_what_a_leader_must_not_store() -> None:
    data = _two_batches()
    first_size = validated_headers(data)[0].size_in_bytes
    with pytest.raises(CorruptRecordError, match="not a whole batch"):
        validated_headers(data + b"\x00" * 20)
    with pytest.raises(CorruptRecordError, match="runs past the end"):
        validated_headers(data[:-1])
    assert len(validated_headers(data[:-1], allow_partial_tail=True)) == 1
    flipped = bytearray(data)
    flipped[first_size - 1] ^= 1
    with pytest.raises(CorruptRecordError, match="CRC"):
        validated_headers(flipped)
    wrong_magic = bytearray(data)
    wrong_magic[16] = 1
    with pytest.raises(CorruptRecordError, match="magic"):
        validated_headers(wrong_magic)
    short = bytearray(data)
    short[8:12] = (30).to_bytes(4, "big")
    with pytest.raises(CorruptRecordError, match="below"):
        validated_headers(short)


def test_stamp_batch_keeps_the_crc_valid() -> None:
    data = bytearray(_two_batches())
    second = validated_headers(data)[1].position
    stamp_batch(data, second, 1234, 9)
    batch = RecordBatch(data, second)
    batch.validate()
    assert (batch.base_offset, batch.partition_leader_epoch) == (1234, 9)
