"""The pure parts of the exactly-once sink: batch markers and the transactional id."""

from __future__ import annotations

from odradek.client.types import ConsumerRecord
from odradek.records import TimestampType
from odradek.spark.exactly_once import BatchMarker, default_transactional_id, last_marker


def record(offset: int, key: bytes | None, value: bytes | None) -> ConsumerRecord:
    return ConsumerRecord("m", 0, offset, 0, TimestampType.CREATE_TIME, key, value, (), None)


def test_marker_round_trip_and_foreign_records():
    marker = BatchMarker("q1", 7)
    assert BatchMarker.parse(marker.key(), marker.value()) == marker
    assert BatchMarker.parse(b"q1", b"not json") is None
    assert BatchMarker.parse(b"q1", b'{"batch_id": "7"}') is None
    assert BatchMarker.parse(None, marker.value()) is None


def test_last_marker_is_the_latest_of_its_transactional_id():
    records = [
        record(0, b"q1", BatchMarker("q1", 3).value()),
        record(2, b"q2", BatchMarker("q2", 9).value()),
        record(4, b"q1", BatchMarker("q1", 4).value()),
        record(6, b"q1", b"junk"),
    ]
    assert last_marker(records, "q1") == BatchMarker("q1", 4)
    assert last_marker(records, "q3") is None


def test_transactional_id_is_stable_per_checkpoint(tmp_path):
    a = default_transactional_id("out", str(tmp_path / "ckpt"))
    assert a == default_transactional_id("out", str(tmp_path / "x" / ".." / "ckpt"))
    assert a != default_transactional_id("out", str(tmp_path / "other"))
    assert a.startswith("spark-out-")
