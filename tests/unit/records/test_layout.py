"""The numpy record layout against the record-by-record reference decoder: equal answers on
valid sections, the reference's error on every section the layout cannot vouch for."""

from __future__ import annotations

from typing import Any, cast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from odradek.errors import CorruptRecordError
from odradek.records import RECORD_BATCH_OVERHEAD, Record, RecordBatch, build_batch, read_batches
from odradek.records import layout as layout_module
from odradek.records import record as record_module
from odradek.records.batch import columns_of
from odradek.records.layout import LAYOUT_MIN_RECORDS, record_layout
from odradek.records.record import decode_columns, layout_columns
from odradek.records.varint import encode_varint

reference = record_module._columns_by_record


def section(records: list[Record], **kwargs: Any) -> tuple[bytes, int, int, int]:
    """The record section of a batch of ``records``: (bytes, count, base offset, base ts)."""
    raw = build_batch(records, **kwargs)
    batch = next(read_batches(raw))
    return raw[RECORD_BATCH_OVERHEAD:], batch.records_count, batch.base_offset, batch.base_timestamp


def both(data: bytes, count: int, base_offset: int = 0, base_ts: int = 0):
    """(layout answer, reference answer), each the columns or the CorruptRecordError."""

    def run(decode):
        try:
            return decode(data, count, base_offset, base_ts, None)
        except CorruptRecordError as exc:
            return exc

    return run(decode_columns), run(reference)


def test_the_threshold_is_the_layouts_own():
    assert record_module._LAYOUT_MIN_RECORDS == LAYOUT_MIN_RECORDS


short_or_long = st.binary(max_size=20) | st.integers(8190, 8200).map(lambda n: b"x" * n)
maybe_bytes = st.none() | short_or_long
headers = st.lists(st.tuples(st.text(max_size=5), st.none() | st.binary(max_size=5)), max_size=2)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(maybe_bytes, maybe_bytes, headers, st.integers(-(2**40), 2**40)),
        min_size=1,
        max_size=6,
    ),
    st.integers(0, 2**40),
    st.integers(LAYOUT_MIN_RECORDS, LAYOUT_MIN_RECORDS + 300),
)
def test_valid_sections_decode_as_the_reference_does(kinds, base_offset, count):
    # A few kinds of record, repeated to a batch big enough for the layout.
    records = [
        Record(key, value, hdrs, timestamp=2**41 + ts + i)
        for i, (key, value, hdrs, ts) in ((i, kinds[i % len(kinds)]) for i in range(count))
    ]
    data, n, base, base_ts = section(records, base_offset=base_offset)
    assert record_layout(data, n) is not None
    got, want = both(data, n, base, base_ts)
    assert got == want
    assert got[3] == [r.value for r in records]
    assert got[4] == [r.headers for r in records]


def _plain(n: int, size: int = 30) -> list[Record]:
    return [Record(None if i % 5 else b"k%d" % i, b"v" * (size + i % 7)) for i in range(n)]


def _equal(n: int) -> list[Record]:
    """A producer's batch: records of one size but for the offset delta's varint (a byte more
    from record 64 on), laid out in runs of one stride (the layout's fast walk)."""
    return [Record(None, b"v" * 100) for _ in range(n)]


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_corrupt_sections_get_the_references_error(data):
    records = data.draw(st.sampled_from([_plain, _equal]))(LAYOUT_MIN_RECORDS + 3)
    raw, count, _, _ = section(records)
    body = bytearray(raw)
    for _ in range(data.draw(st.integers(1, 3))):
        at = data.draw(st.integers(0, len(body) - 1))
        body[at] = data.draw(st.integers(0, 255))
    cut = data.draw(st.sampled_from([0, 0, 1, 7]))
    extra = data.draw(st.sampled_from([b"", b"", b"\x00"]))
    mutated = bytes(body[: len(body) - cut]) + extra
    got, want = both(mutated, count)
    if isinstance(want, CorruptRecordError):
        assert isinstance(got, CorruptRecordError)
        assert got.message == want.message
    else:
        assert got == want


@pytest.mark.parametrize(
    "field",
    ["key size", "value size", "header count"],
)
def test_an_overlong_varint_is_refused_by_the_layout_and_named_by_the_reference(field):
    # Six bytes for an int32 varint: Kafka's ByteUtils refuses it.
    overlong = b"\x80\x80\x80\x80\x80\x00"
    parts = []
    for i in range(LAYOUT_MIN_RECORDS):
        bad = i == 5
        key = overlong if bad and field == "key size" else encode_varint(-1)
        value = overlong if bad and field == "value size" else encode_varint(1) + b"v"
        count = overlong if bad and field == "header count" else encode_varint(0)
        body = b"\x00" + encode_varint(0) + encode_varint(i) + key + value + count
        parts.append(encode_varint(len(body)) + body)
    data = b"".join(parts)
    assert record_layout(data, LAYOUT_MIN_RECORDS) is None
    got, want = both(data, LAYOUT_MIN_RECORDS)
    assert isinstance(want, CorruptRecordError)
    assert isinstance(got, CorruptRecordError) and got.message == want.message


def test_a_count_that_disagrees_with_the_section_is_refused():
    data, count, _, _ = section(_plain(LAYOUT_MIN_RECORDS + 1))
    assert record_layout(data, count - 1) is None
    assert record_layout(data, count + 1) is None
    for wrong in (count - 1, count + 1):
        got, want = both(data, wrong)
        assert isinstance(got, CorruptRecordError) and got.message == want.message


def test_log_append_time_stamps_every_record():
    data, count, base, _ = section(_plain(LAYOUT_MIN_RECORDS))
    offsets, timestamps, *_ = decode_columns(data, count, base, 0, 1_234)
    assert timestamps == [1_234] * count
    assert offsets == list(range(count))


def _batches(sizes: list[int], **kwargs: Any) -> list[RecordBatch]:
    out, base = [], 0
    for i, n in enumerate(sizes):
        records = [
            Record(b"k" if j % 2 else None, b"v%d" % j, [("h", b"x")] if j % 9 == 1 else [])
            for j in range(n)
        ]
        kind = "log_append_time" if i == 1 else "create_time"
        raw = build_batch(records, base_offset=base, timestamp_type=kind, **kwargs)
        out.append(raw)
        base += n + 3  # a gap between batches, as compaction leaves
    buf = b"".join(out)
    return list(read_batches(buf))


@pytest.mark.parametrize("compression", ["none", "zstd"])
def test_many_small_batches_are_laid_out_at_once_as_each_decodes(compression):
    batches = _batches([40, 30, 50, 45], compression=compression)
    sections = [b.section() for b in batches]
    assert layout_columns(sections) is not None  # 165 records together, none alone
    assert all(layout_columns([s]) is None for s in sections)
    want: list[list[Any]] = [[], [], [], [], []]
    for batch in batches:
        for acc, column in zip(want, batch.columns(), strict=True):
            acc.extend(cast(list[Any], column))
    assert list(columns_of(batches)) == want
    assert want[1][40:70] == [batches[1].max_timestamp] * 30  # the LOG_APPEND_TIME batch


def test_a_corrupt_batch_among_many_is_named():
    batches = _batches([40, 30, 50, 45])
    raw = bytearray(b"".join(bytes(b.buffer()) for b in batches))
    third = sum(len(b.buffer()) for b in batches[:2])
    raw[third + RECORD_BATCH_OVERHEAD + 5] = 0x7F  # a varint inside the third batch's records
    corrupt = list(read_batches(bytes(raw)))
    with pytest.raises(CorruptRecordError, match=f"batch at position {third}"):
        columns_of(corrupt)


def test_runs_of_one_stride_are_walked_as_the_record_by_record_walk_does():
    for records in (_equal(600), _equal(LAYOUT_MIN_RECORDS) + _plain(40) + _equal(200)):
        data, count, _, _ = section(records)
        layout = record_layout(data, count)
        assert layout is not None
        walked = layout_module._walk_records(data, count, 0)
        assert walked is not None
        starts, end = walked
        assert end == len(data)
        # each record ends where the one-by-one walk starts the next
        assert layout.record_end[:-1].tolist() == starts[1:]
        assert int(layout.record_end[-1]) == len(data)
        got, want = both(data, count)
        assert got == want
