"""Shared values for the records unit tests."""

from collections.abc import Sequence

from odradek.records import Record

RECORDS = [
    Record(b"key-0", b"value-0", timestamp=1_700_000_000_000),
    Record(None, b"no key", headers=[("trace", b"abc")], timestamp=1_700_000_000_005),
    Record(b"tombstone", None, timestamp=1_700_000_000_003),
    Record(b"", b"", headers=[("h\u00e9llo-\u4e16\u754c", None), ("x", b"")], timestamp=None),
    Record(b"k" * 300, b"v" * 20000, timestamp=1_700_000_000_001),
]


def expected(records: Sequence[Record], base_offset: int) -> list[Record]:
    """The records as decoding should return them: absolute offsets, headers as tuples."""
    return [
        Record(r.key, r.value, r.headers, r.timestamp, base_offset + i)
        for i, r in enumerate(records)
    ]
