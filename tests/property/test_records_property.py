"""Properties of odradek.records against a dumb oracle: the list of records we started from.

1. Round trip: any records, any codec, several batches back to back -> read_batches ->
   validate -> records() gives the same records with consecutive absolute offsets.
2. Corruption: one byte changed anywhere outside bytes 0-15 of a batch is always detected,
   by read_batches, validate() or records() raising CorruptRecordError, and never surfaces as
   any other exception.
3. Decoder robustness: with the CRC recomputed after the change (so only decoding can tell),
   records() returns or raises CorruptRecordError, nothing else.
"""

import struct

import crc32c
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from odradek.errors import CorruptRecordError
from odradek.records import (
    ATTRIBUTES_OFFSET,
    CRC_OFFSET,
    Compression,
    Record,
    RecordBatch,
    build_batch,
    read_batches,
)

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

blobs = st.none() | st.binary(max_size=40) | st.sampled_from([b"", b"abc" * 30])
headers = st.lists(st.tuples(st.text(max_size=8), st.none() | st.binary(max_size=12)), max_size=3)
timestamps = st.none() | st.integers(min_value=0, max_value=2**42)
records = st.builds(Record, key=blobs, value=blobs, headers=headers, timestamp=timestamps)
record_lists = st.lists(records, min_size=1, max_size=12)
codecs = st.sampled_from(list(Compression))


@SETTINGS
@given(
    batches=st.lists(st.tuples(record_lists, codecs), min_size=1, max_size=3),
    base_offset=st.integers(min_value=0, max_value=2**50),
    delete_horizon=st.none() | st.integers(min_value=0, max_value=2**42),
)
def test_round_trip(batches, base_offset, delete_horizon):
    buf = b""
    expected = []
    offset = base_offset
    for recs, codec in batches:
        buf += build_batch(
            recs, base_offset=offset, compression=codec, delete_horizon_ms=delete_horizon
        )
        expected.append(
            [Record(r.key, r.value, r.headers, r.timestamp, offset + i) for i, r in enumerate(recs)]
        )
        offset += len(recs)

    read = list(read_batches(buf))
    assert len(read) == len(batches)
    for batch, (recs, codec), want in zip(read, batches, expected, strict=True):
        batch.validate()
        assert batch.compression is codec
        assert batch.records_count == len(recs)
        assert batch.delete_horizon_ms == delete_horizon
        stamps = [r.timestamp for r in recs if r.timestamp is not None]
        assert batch.max_timestamp == max(stamps, default=-1)
        assert batch.records() == want
    assert read[-1].next_offset == offset


def check_detected(buf: bytes | bytearray) -> bool:
    """Corruption must be reported as CorruptRecordError by the scan, validate or decode."""
    try:
        for batch in read_batches(buf):
            batch.validate()
            batch.records()
    except CorruptRecordError:
        return True
    return False


@SETTINGS
@given(recs=record_lists, codec=codecs, data=st.data())
def test_single_byte_corruption_is_detected(recs, codec, data):
    good = build_batch(recs, compression=codec, base_offset=3)
    where = data.draw(st.integers(min_value=16, max_value=len(good) - 1), label="where")
    flip = data.draw(st.integers(min_value=1, max_value=255), label="xor")
    bad = bytearray(good)
    bad[where] ^= flip
    assert check_detected(bad), f"undetected change at byte {where}"
    # Preceded by an intact batch, the intact one still reads fine before the error.
    prefix = build_batch([Record(b"k", b"v")])
    assert check_detected(prefix + bad)


@SETTINGS
@given(recs=record_lists, codec=codecs, data=st.data())
def test_decoding_garbage_with_a_valid_crc_raises_only_corrupt_record_error(recs, codec, data):
    bad = bytearray(build_batch(recs, compression=codec))
    for _ in range(data.draw(st.integers(min_value=1, max_value=3), label="changes")):
        where = data.draw(st.integers(min_value=ATTRIBUTES_OFFSET, max_value=len(bad) - 1))
        bad[where] ^= data.draw(st.integers(min_value=1, max_value=255))
    struct.pack_into(">I", bad, CRC_OFFSET, crc32c.crc32c(bytes(bad[ATTRIBUTES_OFFSET:])))
    batch = RecordBatch(bad)
    batch.validate()
    try:
        decoded = batch.records()
    except CorruptRecordError:
        return
    assert all(isinstance(r, Record) for r in decoded)
