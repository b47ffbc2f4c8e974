"""Control batches (transaction markers): built as Kafka's ``withEndTransactionMarker``, read
back by odradek and by kafka-python's independent decoder."""

import warnings

import pytest

from odradek.errors import CorruptRecordError
from odradek.records import (
    ControlRecordType,
    EndTransactionMarker,
    Record,
    RecordBatch,
    build_batch,
    build_end_txn_marker,
    end_txn_marker_of,
    parse_end_txn_marker,
)
from odradek.records.control import control_record_key, control_record_type

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka.record.default_records import DefaultRecordBatch


@pytest.mark.parametrize("control_type", [ControlRecordType.COMMIT, ControlRecordType.ABORT])
def test_marker_batch_header_and_record(control_type):
    marker = EndTransactionMarker(control_type, coordinator_epoch=7)
    data = build_end_txn_marker(
        marker, producer_id=42, producer_epoch=3, timestamp=1_700_000_000_000, base_offset=10
    )
    batch = RecordBatch(data)
    batch.validate()
    assert batch.is_control and batch.is_transactional
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (42, 3, -1)
    assert (batch.base_offset, batch.records_count, batch.last_offset_delta) == (10, 1, 0)
    (record,) = batch.records()
    assert record.key == bytes([0, 0, 0, int(control_type)])
    assert record.value == bytes([0, 0, 0, 0, 0, 7])
    assert record.timestamp == 1_700_000_000_000
    assert end_txn_marker_of(batch) == marker


@pytest.mark.parametrize("control_type", [ControlRecordType.COMMIT, ControlRecordType.ABORT])
def test_kafka_python_reads_the_marker(control_type):
    data = build_end_txn_marker(
        EndTransactionMarker(control_type, 5), producer_id=9, producer_epoch=0, timestamp=1
    )
    theirs = DefaultRecordBatch(bytearray(data))
    assert theirs.validate_crc()
    assert theirs.is_control_batch and theirs.is_transactional
    (record,) = list(theirs)
    assert record.version == 0
    assert record.commit is (control_type is ControlRecordType.COMMIT)
    assert record.abort is (control_type is ControlRecordType.ABORT)


def test_unknown_control_type_is_skippable():
    data = build_batch(
        [Record(b"\x00\x00\x00\x05", b"", timestamp=1)],
        producer_id=1,
        producer_epoch=0,
        base_sequence=-1,
        is_transactional=True,
        is_control=True,
    )
    assert end_txn_marker_of(RecordBatch(data)) is None
    assert control_record_type(b"\x00\x01\x00\x05") is ControlRecordType.UNKNOWN


def test_newer_versions_are_read_by_their_first_fields():
    key = b"\x00\x01\x00\x01extra"
    value = b"\x00\x01\x00\x00\x00\x02more"
    assert parse_end_txn_marker(key, value) == EndTransactionMarker(ControlRecordType.COMMIT, 2)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        (None, b"\x00\x00\x00\x00\x00\x01"),
        (b"\x00\x00\x00", b"\x00\x00\x00\x00\x00\x01"),
        (control_record_key(ControlRecordType.ABORT), None),
        (control_record_key(ControlRecordType.ABORT), b"\x00\x00\x00\x00\x00"),
        (b"\x00\x00\x00\x09", b"\x00\x00\x00\x00\x00\x01"),
    ],
)
def test_malformed_markers_are_corrupt(key, value):
    with pytest.raises(CorruptRecordError):
        parse_end_txn_marker(key, value)


def test_data_batch_is_not_a_marker():
    data = build_batch([Record(b"k", b"v", timestamp=1)])
    with pytest.raises(CorruptRecordError):
        end_txn_marker_of(RecordBatch(data))


def test_marker_needs_a_producer_and_a_marker_type():
    with pytest.raises(ValueError):
        build_end_txn_marker(
            EndTransactionMarker(ControlRecordType.COMMIT, 0),
            producer_id=-1,
            producer_epoch=0,
            timestamp=1,
        )
    with pytest.raises(ValueError):
        EndTransactionMarker(ControlRecordType.UNKNOWN, 0)
