"""storage.log_validator: every record of a client's batch is read before the leader appends it,
as Kafka's LogValidator does — a right CRC over malformed records is refused, nothing written."""

from __future__ import annotations

import struct

import pytest
from crc32c import crc32c

from odradek.clock import ManualClock
from odradek.errors import (
    CorruptRecordError,
    InvalidRecordError,
    InvalidTimestampError,
    RecordError,
)
from odradek.records import (
    ATTRIBUTES_OFFSET,
    CRC_OFFSET,
    RECORD_BATCH_OVERHEAD,
    Compression,
    Record,
    build_batch,
)
from odradek.records.compression import compress
from storage import LogConfig
from storage.log_validator import check_records
from tests.storage_helpers import all_records, open_log

_LENGTH_OFFSET = 8


def _fix_crc(batch: bytearray) -> bytes:
    struct.pack_into(">I", batch, CRC_OFFSET, crc32c(bytes(batch[ATTRIBUTES_OFFSET:])))
    return bytes(batch)


def _with_section(batch: bytes, section: bytes, codec: Compression = Compression.NONE) -> bytes:
    """``batch`` with its record section replaced by ``section`` (compressed with ``codec``),
    its length, codec and CRC made right again: only the records can be wrong."""
    out = bytearray(batch[:RECORD_BATCH_OVERHEAD]) + compress(codec, section)
    struct.pack_into(">i", out, _LENGTH_OFFSET, len(out) - 12)
    attributes = struct.unpack_from(">h", out, ATTRIBUTES_OFFSET)[0]
    struct.pack_into(">h", out, ATTRIBUTES_OFFSET, (attributes & ~0x07) | codec.value)
    return _fix_crc(out)


def _small(count: int, **kwargs: object) -> bytes:
    """A batch of ``count`` records of one-byte length prefixes: ``null key, value b"v"``."""
    return build_batch([Record(None, b"v") for _ in range(count)], **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize("count", [1, 5, 127, 128, 600])
@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_a_valid_batch_is_read_whole(count, codec):
    keyed = build_batch(
        [
            Record(b"k%d" % i, b"v" * 100, headers=[("h", b"x")] if i % 7 else [])
            for i in range(count)
        ],
        compression=codec,
    )
    assert check_records(keyed, 0) == ()
    assert check_records(b"\0" * 9 + _small(count, compression=codec), 9) == tuple(range(count))


@pytest.mark.parametrize("count", [6, 300])
@pytest.mark.parametrize("codec", ["none", "gzip"])
def test_the_keyless_records_are_named_by_their_index_in_the_batch(count, codec):
    batch = build_batch(
        [Record(None if i % 3 == 1 else b"k", b"v") for i in range(count)], compression=codec
    )
    assert check_records(batch, 0) == tuple(range(1, count, 3))


@pytest.mark.parametrize("count", [3, 200])
@pytest.mark.parametrize("lie", [0x01, 0x7E, 0x02, 0x7F])
def test_a_record_length_that_lies_is_corrupt(count, lie):
    batch = bytearray(_small(count))
    batch[RECORD_BATCH_OVERHEAD] = lie  # the first record's length varint
    with pytest.raises(CorruptRecordError, match="batch at position 0"):
        check_records(_fix_crc(batch), 0)


@pytest.mark.parametrize("count", [3, 200])
def test_a_key_length_past_its_record_is_corrupt(count):
    batch = bytearray(_small(count))
    # length, attributes, timestamp delta, offset delta, then the key length: -1 becomes 60
    batch[RECORD_BATCH_OVERHEAD + 4] = 120
    with pytest.raises(CorruptRecordError):
        check_records(_fix_crc(batch), 0)


@pytest.mark.parametrize("count", [3, 200])
def test_a_header_that_overruns_its_record_is_corrupt(count):
    batch = build_batch([Record(None, b"v", headers=[("h", b"x")]) for _ in range(count)])
    section = bytearray(batch[RECORD_BATCH_OVERHEAD:])
    # record: length, attributes, ts delta, offset delta, key -1, value 1 "v", count 1, key len
    section[7] = 40  # the header key's length: 20 bytes, past the record
    with pytest.raises(CorruptRecordError):
        check_records(_with_section(batch, bytes(section)), 0)


@pytest.mark.parametrize(
    "codec", [Compression.GZIP, Compression.SNAPPY, Compression.LZ4, Compression.ZSTD]
)
def test_garbage_under_a_codec_is_corrupt(codec):
    batch = bytearray(_small(10))
    batch[RECORD_BATCH_OVERHEAD:] = bytes(range(7, 7 + len(batch) - RECORD_BATCH_OVERHEAD))
    struct.pack_into(">h", batch, ATTRIBUTES_OFFSET, codec.value)
    with pytest.raises(CorruptRecordError):
        check_records(_fix_crc(batch), 0)


def test_an_unknown_codec_is_corrupt():
    batch = bytearray(_small(2))
    struct.pack_into(">h", batch, ATTRIBUTES_OFFSET, 6)
    with pytest.raises(CorruptRecordError):
        check_records(_fix_crc(batch), 0)


def test_more_records_than_the_count_is_corrupt():
    batch = _small(3)
    section = batch[RECORD_BATCH_OVERHEAD:]
    with pytest.raises(CorruptRecordError):
        check_records(_with_section(batch, section + section[:4]), 0)


@pytest.mark.parametrize("count", [4, 300])
def test_a_compressed_batch_needs_incremental_offsets(count):
    batch = _small(count)
    section = bytearray(batch[RECORD_BATCH_OVERHEAD:])
    assert check_records(_with_section(batch, bytes(section), Compression.GZIP), 0)
    section[3 + 8 * 2] = 2 * 3  # record 2 (8 bytes each) says offset delta 3 (zig-zag 6)
    with pytest.raises(InvalidRecordError, match="record 2 has offset delta 3, expected 2"):
        check_records(_with_section(batch, bytes(section), Compression.GZIP), 0)
    # Kafka does not check an uncompressed batch's deltas (its offsets are reassigned)
    assert check_records(_with_section(batch, bytes(section)), 0)


def test_the_leader_refuses_malformed_records_and_writes_nothing(tmp_path, clock):
    log = open_log(tmp_path, clock, LogConfig())
    log.append_as_leader(build_batch([Record(b"k", b"kept")]), leader_epoch=0)
    batch = bytearray(_small(3))
    batch[RECORD_BATCH_OVERHEAD] = 0x7E
    with pytest.raises(CorruptRecordError):
        log.append_as_leader(_fix_crc(batch), leader_epoch=0)
    assert all_records(log) == [(0, b"kept")]
    assert log.log_end_offset == 1


def test_a_compacted_log_still_refuses_a_record_without_a_key(tmp_path, clock):
    log = open_log(tmp_path, clock, LogConfig(cleanup_policy="compact"))
    with pytest.raises(InvalidRecordError, match="without key in topic partition topic-0"):
        log.append_as_leader(_small(1), leader_epoch=0)
    log.append_as_leader(build_batch([Record(b"k", b"v")]), leader_epoch=0)


def test_a_compacted_log_names_each_keyless_record_of_the_refused_batch(tmp_path, clock):
    # Kafka's LogValidator (KIP-467): the whole batch is refused, INVALID_RECORD, one record
    # error per keyless record by its index in the batch, the message quoting three of them
    log = open_log(tmp_path, clock, LogConfig(cleanup_policy="compact"), name="orders-3")
    keys = [b"a", None, b"c", None, None, None]
    with pytest.raises(InvalidRecordError) as caught:
        log.append_as_leader(build_batch([Record(k, b"v") for k in keys]), leader_epoch=0)
    why = "Compacted topic cannot accept message without key in topic partition orders-3"
    assert caught.value.record_errors == tuple(RecordError(i, why) for i in (1, 3, 4, 5))
    assert caught.value.message == (
        "One or more records have been rejected due to 4 record errors in total, and only "
        "showing the first three errors at most: ["
        + ", ".join(f"RecordError(batchIndex={i}, message='{why}')" for i in (1, 3, 4))
        + "]"
    )
    assert log.log_end_offset == 0 and log.size == 0


def test_records_out_of_the_timestamp_limits_are_named_and_refuse_the_batch(tmp_path):
    # Kafka's message.timestamp.before.max.ms / after.max.ms (CreateTime topics only): each
    # record out of range named by its index, INVALID_TIMESTAMP; no timestamp is not checked
    clock = ManualClock(wall_ms=1_000_000)
    config = LogConfig(message_timestamp_before_max_ms=1000, message_timestamp_after_max_ms=10)
    log = open_log(tmp_path, clock, config)
    times = [999_500, 998_000, 1_000_010, 1_000_011, -1]
    batch = build_batch([Record(b"k", b"v", timestamp=t) for t in times])
    with pytest.raises(InvalidTimestampError) as caught:
        log.append_as_leader(batch, leader_epoch=0)
    assert caught.value.message == "One or more records have been rejected due to invalid timestamp"
    assert caught.value.record_errors == (
        RecordError(
            1,
            "Timestamp 998000 of message with offset 1 is out of range. The timestamp should "
            "be within [999000, 1000010]",
        ),
        RecordError(
            3,
            "Timestamp 1000011 of message with offset 3 is out of range. The timestamp should "
            "be within [999000, 1000010]",
        ),
    )
    assert log.log_end_offset == 0
    log.append_as_leader(build_batch([Record(b"k", b"v", timestamp=999_000)]), leader_epoch=0)
    # LogAppendTime topics are not checked
    stamped = open_log(
        tmp_path, clock, config.replace(message_timestamp_type="log_append_time"), name="s-0"
    )
    stamped.append_as_leader(batch, leader_epoch=0)


def test_a_keyless_record_is_named_once_and_the_timestamps_make_it_invalid_timestamp(tmp_path):
    clock = ManualClock(wall_ms=1_000_000)
    config = LogConfig(cleanup_policy="compact", message_timestamp_before_max_ms=1000)
    log = open_log(tmp_path, clock, config)
    keyless_and_old = Record(None, b"v", timestamp=1)
    with pytest.raises(InvalidRecordError) as only_keys:
        log.append_as_leader(build_batch([Record(b"k", b"v"), keyless_and_old]), leader_epoch=0)
    assert [e.batch_index for e in only_keys.value.record_errors] == [1]
    assert "without key" in only_keys.value.record_errors[0].message
    old = Record(b"k", b"v", timestamp=2)
    with pytest.raises(InvalidTimestampError) as both:
        log.append_as_leader(build_batch([keyless_and_old, old]), leader_epoch=0)
    assert [e.batch_index for e in both.value.record_errors] == [0, 1]
    assert "without key" in both.value.record_errors[0].message
    assert "Timestamp 2 of message with offset 1" in both.value.record_errors[1].message
