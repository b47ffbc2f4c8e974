"""Decoding record batches into Arrow columns, against the SDK's own decoder."""

from __future__ import annotations

import pyarrow as pa  # type: ignore[import-untyped]
import pytest

from odradek.records import Record, build_batch, read_batches
from odradek.spark.arrow import ArrowBatchBuilder, arrow_schema


def records(n: int) -> list[Record]:
    out = []
    for i in range(n):
        key = None if i % 3 == 0 else f"k{i}".encode()
        value = None if i % 7 == 6 else bytes([i % 256]) * (i * 13 % 300)
        if i % 50 == 5:
            value = b"x" * 20_000  # three-byte varints: the decoder's slow path
        headers = [] if i % 2 else [("h", f"v{i}".encode()), ("empty", None)]
        out.append(Record(key, value, headers, timestamp=1_700_000_000_000 + i * 999))
    return out


@pytest.mark.parametrize("compression", ["none", "gzip", "zstd"])
def test_columns_match_the_sdk_decoder(compression):
    batch_bytes = build_batch(records(200), base_offset=1000, compression=compression)
    batch = next(read_batches(batch_bytes))
    expected = batch.records()
    builder = ArrowBatchBuilder("events", 3, include_headers=True)
    assert builder.add(batch, 1010, 1150) == 140
    out = builder.build()
    assert out.schema == arrow_schema(True)
    want = [r for r in expected if r.offset is not None and 1010 <= r.offset < 1150]
    assert out.column("offset").to_pylist() == [r.offset for r in want]
    assert out.column("key").to_pylist() == [r.key for r in want]
    assert out.column("value").to_pylist() == [r.value for r in want]
    assert out.column("topic").to_pylist() == ["events"] * 140
    assert out.column("partition").to_pylist() == [3] * 140
    assert out.column("timestampType").to_pylist() == [0] * 140
    micros = out.column("timestamp").cast(pa.int64()).to_pylist()
    assert micros == [r.timestamp * 1000 for r in want if r.timestamp is not None]
    headers = out.column("headers").to_pylist()
    assert headers == [
        [{"key": k, "value": v} for k, v in r.headers] if r.headers else None for r in want
    ]
    assert len(builder) == 0


def test_without_headers_and_log_append_time():
    batch = next(
        read_batches(build_batch(records(5), base_offset=0, timestamp_type="log_append_time"))
    )
    builder = ArrowBatchBuilder("t", 0, include_headers=False)
    builder.add(batch, 0, 100)
    out = builder.build()
    assert out.schema == arrow_schema(False)
    assert out.column("timestampType").to_pylist() == [1] * 5
    assert set(out.column("timestamp").cast(pa.int64()).to_pylist()) == {batch.max_timestamp * 1000}


def test_empty_build_is_a_valid_batch():
    out = ArrowBatchBuilder("t", 0, include_headers=True).build()
    assert out.num_rows == 0 and out.schema == arrow_schema(True)


@pytest.mark.parametrize("include_headers", [True, False])
def test_small_and_large_batches_build_one_arrow_batch(include_headers):
    # Below LAYOUT_MIN_RECORDS a batch is decoded record by record, above it through the
    # layout: both kinds, and a range cut inside each, in one Arrow batch.
    small = next(read_batches(build_batch(records(9), base_offset=0)))
    large = next(read_batches(build_batch(records(400), base_offset=9)))
    nulls = next(read_batches(build_batch([Record(None, None, [])] * 150, base_offset=409)))
    builder = ArrowBatchBuilder("t", 1, include_headers=include_headers)
    assert builder.add(small, 2, 10_000) == 7
    assert builder.add(large, 0, 400) == 391
    assert builder.add(nulls, 0, 10_000) == 150
    assert len(builder) == 548
    out = builder.build()
    want = small.records()[2:] + large.records()[:391] + nulls.records()
    assert out.column("offset").to_pylist() == [r.offset for r in want]
    assert out.column("key").to_pylist() == [r.key for r in want]
    assert out.column("value").to_pylist() == [r.value for r in want]
    if include_headers:
        assert out.column("headers").to_pylist() == [
            [{"key": k, "value": v} for k, v in r.headers] if r.headers else None for r in want
        ]
    assert builder.build().num_rows == 0
