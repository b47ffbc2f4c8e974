import dataclasses

import pytest

from odradek.errors import CorruptRecordError
from odradek.records import RECORD_BATCH_OVERHEAD, Record, build_batch, read_batches
from odradek.records.record import decode_records


def test_minimal_constructor_and_defaults():
    r = Record(key=b"k", value=b"v")
    assert (r.key, r.value, r.headers, r.timestamp, r.offset) == (b"k", b"v", (), None, None)
    assert Record(b"k", b"v") == r


def test_headers_are_stored_as_tuples_whatever_sequence_is_given():
    r = Record(None, b"v", headers=[["a", b"1"], ("b", None)])  # type: ignore[list-item]
    assert r.headers == (("a", b"1"), ("b", None))
    assert type(r.headers) is tuple
    assert all(type(h) is tuple for h in r.headers)
    assert r == Record(None, b"v", headers=(("a", b"1"), ("b", None)))
    assert hash(r) == hash(Record(None, b"v", headers=(("a", b"1"), ("b", None))))


def test_frozen_and_slotted():
    r = Record(b"k", b"v")
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.key = b"x"  # type: ignore[misc]
    assert not hasattr(r, "__dict__")
    assert dataclasses.replace(r, offset=5).offset == 5


# The decoder reads one- and two-byte varints inline and longer ones with decode_varint /
# decode_varlong: every field is exercised on both sides of each boundary (zig-zag values
# 63/64 and 8191/8192 are where one byte becomes two and two become three).
BOUNDARY_SIZES = [0, 1, 63, 64, 65, 8191, 8192, 8193, 70_000]


def _round_trip(records: list[Record], base_offset: int = 0) -> list[Record]:
    (batch,) = read_batches(build_batch(records, base_offset=base_offset))
    batch.validate()
    return batch.records()


@pytest.mark.parametrize("size", BOUNDARY_SIZES)
def test_decoded_keys_values_and_headers_of_every_varint_width(size):
    blob = bytes(range(256)) * (size // 256) + bytes(size % 256)
    records = [
        Record(blob, None),
        Record(None, blob),
        Record(blob, blob, headers=[("h" * min(size, 9000), blob), ("n", None)]),
        Record(b"", b""),
    ]
    decoded = _round_trip(records, base_offset=7)
    assert decoded == [
        Record(r.key, r.value, r.headers, r.timestamp, 7 + i) for i, r in enumerate(records)
    ]


def test_decoded_offset_and_timestamp_deltas_of_every_width():
    base_ts = 1_700_000_000_000
    deltas = [0, 31, 32, 33, 4095, 4096, 4097, -1, -32, -33, -4096, -4097, 2**40, -(2**40)]
    # 9000 records: offset deltas run through the one-, two- and three-byte widths
    records = [
        Record(None, b"v", timestamp=base_ts + deltas[i % len(deltas)] if i else base_ts)
        for i in range(9000)
    ]
    decoded = _round_trip(records, base_offset=2**40)
    assert [r.offset for r in decoded] == [2**40 + i for i in range(9000)]
    assert [r.timestamp for r in decoded] == [r.timestamp for r in records]
    assert decoded[5] == Record(None, b"v", (), records[5].timestamp, 2**40 + 5)


@pytest.mark.parametrize("cut", [1, 2, 3, 60, 100])
def test_a_record_section_cut_short_is_corrupt(cut):
    records = [Record(b"k" * 70, b"v" * 9000, headers=[("h", b"x" * 70)]) for _ in range(3)]
    section = build_batch(records)[RECORD_BATCH_OVERHEAD:]
    assert len(decode_records(section, 3, 0, 0, None)) == 3  # whole, it decodes
    with pytest.raises(CorruptRecordError):
        decode_records(section[:-cut], 3, 0, 0, None)
