"""One batch through the cleaner: mapping its keys, filtering and rebuilding it (Kafka's
MemoryRecordsTest#testFilterTo* and the record rules of LogCleanerTest, in our words)."""

from __future__ import annotations

import pytest

from odradek.errors import CorruptRecordError
from odradek.records import (
    NO_TIMESTAMP,
    Compression,
    Record,
    RecordBatch,
    build_batch,
)
from odradek.records.batch import HEADER_STRUCT
from storage.batch_filter import FilterOutcome, check_crc, filter_batch, put_keys
from storage.offset_map import OffsetMap

NOW = 1_700_000_000_000


def batch(records: list[tuple[bytes | None, bytes | None]], base: int = 0, **kw) -> bytes:
    return build_batch(
        [Record(k, v, timestamp=1000 + i) for i, (k, v) in enumerate(records)],
        base_offset=base,
        **kw,
    )


def mapped(*batches: bytes, start: int = 0, memory: int = 4096) -> OffsetMap:
    m = OffsetMap(memory)
    m.clear(start)
    for b in batches:
        header = HEADER_STRUCT.unpack_from(b, 0)
        check_crc(memoryview(b), 0, header)
        assert not put_keys(b, 0, header, start, m)
        m.update_latest_offset(header[0] + header[6])
    return m


def run(b: bytes, m: OffsetMap, now: int = NOW, retain_empty: bool = False) -> FilterOutcome:
    header = HEADER_STRUCT.unpack_from(b, 0)
    return filter_batch(
        b,
        memoryview(b),
        0,
        header,
        offset_map=m,
        now_ms=now,
        delete_retention_ms=1000,
        retain_empty=retain_empty,
    )


def decoded(data: bytes | memoryview | None) -> list[tuple[int | None, bytes | None, bytes | None]]:
    assert data is not None
    rb = RecordBatch(bytes(data))
    rb.validate()
    return [(r.offset, r.key, r.value) for r in rb.records()]


def test_superseded_records_go_and_the_batch_keeps_its_offsets():
    first = batch(
        [(b"a", b"1"), (b"b", b"2"), (b"c", b"3")],
        base=10,
        producer_id=7,
        producer_epoch=2,
        base_sequence=40,
        partition_leader_epoch=5,
    )
    later = batch([(b"b", b"22")], base=13)
    m = mapped(first, later)
    out = run(first, m)
    assert out.rewritten and (out.records_read, out.records_retained) == (3, 2)
    rb = RecordBatch(bytes(out.data))  # type: ignore[arg-type]
    rb.validate()
    assert (rb.base_offset, rb.last_offset, rb.records_count) == (10, 12, 2)
    assert (rb.producer_id, rb.producer_epoch, rb.base_sequence) == (7, 2, 40)
    assert rb.partition_leader_epoch == 5
    assert [(r.offset, r.key, r.value, r.timestamp) for r in rb.records()] == [
        (10, b"a", b"1", 1000),
        (12, b"c", b"3", 1002),
    ]
    assert rb.max_timestamp == out.max_timestamp == 1002
    assert run(later, m).data == memoryview(later)  # the latest of every key: untouched


def test_the_max_timestamp_is_that_of_the_survivors():
    first = batch([(b"a", b"1"), (b"b", b"2")], base=0)  # timestamps 1000, 1001
    m = mapped(first, batch([(b"b", b"x")], base=2))
    out = run(first, m)
    assert RecordBatch(bytes(out.data)).max_timestamp == out.max_timestamp == 1000  # type: ignore[arg-type]


def test_a_batch_with_nothing_left_is_dropped_or_kept_as_a_header():
    first = batch([(b"a", b"1"), (b"a", b"2")], base=0)
    m = mapped(first, batch([(b"a", b"3")], base=2))
    assert run(first, m).data is None
    kept = run(first, m, retain_empty=True)
    rb = RecordBatch(bytes(kept.data))  # type: ignore[arg-type]
    rb.validate()
    assert (rb.base_offset, rb.last_offset, rb.records_count, rb.size_in_bytes) == (0, 1, 0, 61)
    assert rb.records() == [] and rb.delete_horizon_ms is None
    assert rb.max_timestamp == kept.max_timestamp == 1001


def test_a_surviving_tombstone_gets_a_delete_horizon_then_goes_after_it():
    # LogCleanerTest#testCleanTombstone: two passes, delete.retention.ms apart
    first = batch([(b"a", b"1"), (b"b", None)], base=0)
    m = mapped(first)
    out = run(first, m, now=NOW)
    rb = RecordBatch(bytes(out.data))  # type: ignore[arg-type]
    rb.validate()
    assert rb.delete_horizon_ms == NOW + 1000
    # the horizon is the base timestamp; the records' own timestamps do not change
    assert [(r.offset, r.key, r.value, r.timestamp) for r in rb.records()] == [
        (0, b"a", b"1", 1000),
        (1, b"b", None, 1001),
    ]
    with_horizon = bytes(out.data)  # type: ignore[arg-type]
    m = mapped(with_horizon)
    assert run(with_horizon, m, now=NOW + 999).data == memoryview(with_horizon)
    after = run(with_horizon, m, now=NOW + 1000)
    assert decoded(after.data) == [(0, b"a", b"1")]
    assert RecordBatch(bytes(after.data)).delete_horizon_ms == NOW + 1000  # type: ignore[arg-type]


def test_a_tombstone_superseded_by_a_value_goes_at_once():
    first = batch([(b"a", None)], base=0)
    m = mapped(first, batch([(b"a", b"back")], base=1))
    assert run(first, m).data is None


def test_records_past_the_maps_end_are_kept_untouched():
    first = batch([(b"a", b"1"), (b"a", b"2"), (None, b"keyless"), (b"t", None)], base=0)
    m = OffsetMap(4096)
    m.clear(0)
    m.put(b"a", 1)  # the map covers offsets 0..1 only
    out = run(first, m)
    # a tombstone among the kept records sets the horizon, as in Kafka, even past the end
    assert decoded(out.data) == [(1, b"a", b"2"), (2, None, b"keyless"), (3, b"t", None)]
    assert RecordBatch(bytes(out.data)).delete_horizon_ms == NOW + 1000  # type: ignore[arg-type]


def test_keyless_records_in_the_cleaned_range_are_dropped():
    first = batch([(None, b"x"), (b"k", b"v")], base=0)
    m = mapped(first)
    assert decoded(run(first, m).data) == [(1, b"k", b"v")]


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_compressed_batches_are_recompressed_with_their_codec(codec):
    first = batch(
        [(f"k{i % 5}".encode(), f"v{i}".encode() * 20) for i in range(20)], compression=codec
    )
    m = mapped(first)
    out = run(first, m)
    rb = RecordBatch(bytes(out.data))  # type: ignore[arg-type]
    rb.validate()
    assert rb.compression is Compression.from_name(codec)
    assert [(r.offset, r.key) for r in rb.records()] == [
        (15 + i, f"k{i}".encode()) for i in range(5)
    ]


def test_log_append_time_batches_keep_their_append_time():
    first = build_batch(
        [Record(b"a", b"1", timestamp=5), Record(b"a", b"2", timestamp=5)],
        timestamp_type="log_append_time",
    )
    m = mapped(first)
    out = run(first, m)
    rb = RecordBatch(bytes(out.data))  # type: ignore[arg-type]
    assert rb.max_timestamp == out.max_timestamp == 5
    assert [(r.offset, r.timestamp) for r in rb.records()] == [(1, 5)]


def test_records_without_timestamps_keep_none():
    first = build_batch([Record(b"a", b"1"), Record(b"b", None)])
    out = run(first, mapped(first))
    rb = RecordBatch(bytes(out.data))  # type: ignore[arg-type]
    assert rb.delete_horizon_ms == NOW + 1000
    assert [r.timestamp for r in rb.records()] == [None, None]
    assert rb.max_timestamp == NO_TIMESTAMP


def test_control_batches_are_kept_whole():
    control = build_batch(
        [Record(b"\x00\x00\x00\x01", b"\x00\x00\x00\x00\x00\x00")],
        is_control=True,
        producer_id=1,
        producer_epoch=0,
        is_transactional=True,
    )
    m = OffsetMap(4096)
    m.clear(0)
    m.update_latest_offset(10)
    assert not put_keys(control, 0, HEADER_STRUCT.unpack_from(control, 0), 0, m)
    assert m.size == 0
    assert run(control, m).data == memoryview(control)


def test_put_keys_maps_from_the_start_offset_and_stops_when_the_map_is_full():
    b = batch([(f"k{i}".encode(), b"v") for i in range(10)], base=100)
    m = OffsetMap(3 * 16 + 8, load_factor=1.0)  # 3 slots, 2 entries
    m.clear(103)
    assert put_keys(b, 0, HEADER_STRUCT.unpack_from(b, 0), 103, m)
    assert (m.size, m.latest_offset) == (2, 104)
    assert (m.get(b"k2"), m.get(b"k3"), m.get(b"k4"), m.get(b"k5")) == (-1, 103, 104, -1)


def test_a_corrupt_batch_is_refused_not_rewritten():
    b = bytearray(batch([(b"a", b"1"), (b"a", b"2")]))
    b[-1] ^= 0xFF
    with pytest.raises(CorruptRecordError):
        check_crc(memoryview(b), 0, HEADER_STRUCT.unpack_from(b, 0))


def test_malformed_records_raise():
    good = batch([(b"a", b"1")])
    bad = bytearray(good)
    bad[61] = 0x7E  # record length far past the batch
    m = mapped(good)
    with pytest.raises(CorruptRecordError):
        put_keys(bytes(bad), 0, HEADER_STRUCT.unpack_from(bad, 0), 0, m)
    with pytest.raises(CorruptRecordError):
        run(bytes(bad), m)
