"""``__transaction_state``'s keys and values in Kafka's bytes (TransactionLogKey v0,
TransactionLogValue v0 written, v0 and v1 read)."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from odradek.errors import CorruptRecordError
from odradek.txn_records import (
    TransactionLogKey,
    TransactionLogValue,
    TransactionStatus,
    decode_txn_key,
    decode_txn_value,
    encode_txn_key,
    encode_txn_value,
)


def test_the_key_is_version_0_and_a_classic_string() -> None:
    raw = encode_txn_key(TransactionLogKey("app-1"))
    assert raw == b"\x00\x00\x00\x05app-1"
    assert decode_txn_key(raw) == TransactionLogKey("app-1")


def test_a_version_0_value_is_kafkas_layout() -> None:
    value = TransactionLogValue(
        producer_id=7,
        producer_epoch=3,
        transaction_timeout_ms=60_000,
        status=TransactionStatus.ONGOING,
        partitions=(("b", 1), ("a", 2), ("a", 0)),
        last_update_timestamp_ms=1000,
        start_timestamp_ms=900,
    )
    raw = encode_txn_value(value)
    assert raw is not None
    expected = (
        struct.pack(">hqhib", 0, 7, 3, 60_000, 1)
        + struct.pack(">i", 2)  # two topics, sorted
        + struct.pack(">h", 1)
        + b"a"
        + struct.pack(">iii", 2, 0, 2)
        + struct.pack(">h", 1)
        + b"b"
        + struct.pack(">ii", 1, 1)
        + struct.pack(">qq", 1000, 900)
    )
    assert raw == expected
    decoded = decode_txn_value(raw)
    assert decoded is not None
    assert decoded.partitions == (("a", 0), ("a", 2), ("b", 1))
    assert decoded.status is TransactionStatus.ONGOING
    assert encode_txn_value(None) is None and decode_txn_value(None) is None


def test_a_version_1_value_with_its_tags_is_read() -> None:
    body = struct.pack(">hqhib", 1, 9, 0, 1000, 4)
    body += bytes([2])  # compact array: one topic
    body += bytes([2]) + b"t" + bytes([2]) + struct.pack(">i", 5) + bytes([0])  # t: [5]
    body += struct.pack(">qq", 20, 10)
    body += bytes([2])  # two tagged fields
    body += bytes([1, 8]) + struct.pack(">q", 11)  # NextProducerId
    body += bytes([2, 2]) + struct.pack(">h", 2)  # ClientTransactionVersion
    value = decode_txn_value(body)
    assert value == TransactionLogValue(
        9,
        0,
        1000,
        TransactionStatus.COMPLETE_COMMIT,
        (("t", 5),),
        20,
        10,
        next_producer_id=11,
        client_transaction_version=2,
    )


@pytest.mark.parametrize(
    "raw",
    [b"", b"\x00\x05", b"\x00\x00" + b"\x00" * 10, struct.pack(">hqhib", 0, 1, 0, 1, 9)],
)
def test_malformed_values_are_corrupt_records(raw: bytes) -> None:
    with pytest.raises(CorruptRecordError):
        decode_txn_value(raw)


def test_state_names_are_kafkas() -> None:
    assert TransactionStatus.PREPARE_EPOCH_FENCE.kafka_name == "PrepareEpochFence"
    assert TransactionStatus.from_kafka_name("CompleteAbort") is TransactionStatus.COMPLETE_ABORT
    with pytest.raises(ValueError):
        TransactionStatus.from_kafka_name("ongoing")


@given(
    st.builds(
        TransactionLogValue,
        producer_id=st.integers(-1, 2**63 - 1),
        producer_epoch=st.integers(-1, 32767),
        transaction_timeout_ms=st.integers(0, 2**31 - 1),
        status=st.sampled_from(TransactionStatus),
        partitions=st.lists(
            st.tuples(st.text(min_size=1, max_size=5), st.integers(0, 100)), unique=True
        ).map(lambda ps: tuple(sorted(ps))),
        last_update_timestamp_ms=st.integers(-1, 2**62),
        start_timestamp_ms=st.integers(-1, 2**62),
    )
)
def test_values_round_trip(value: TransactionLogValue) -> None:
    assert decode_txn_value(encode_txn_value(value)) == value
