"""A batch the broker refused naming its invalid records (KIP-467): each record's future fails
with an error of its own, as Kafka's producer (``Sender.failBatch``) does."""

from __future__ import annotations

import pytest

from odradek.client.errors import InvalidDifferentRecordError, error_from_code
from odradek.client.futures import FutureRecordMetadata, ProduceRequestResult
from odradek.client.types import TopicPartition
from odradek.errors import InvalidRecordError, InvalidTimestampError, RecordError
from odradek.producer import SendManyFuture

TP = TopicPartition("orders", 0)


def failed(code: int, named: tuple[RecordError, ...], count: int) -> list[BaseException | None]:
    result = ProduceRequestResult(TP)
    futures = [FutureRecordMetadata(result, i, 0) for i in range(count)]
    result.complete(-1, -1, error_from_code(code, "the summary", str(TP), named))
    return [f.exception(timeout=0) for f in futures]


def test_each_named_record_fails_with_its_message_and_the_others_as_different_records():
    named = (RecordError(1, "no key"), RecordError(3, "no key either"))
    errors = failed(87, named, 4)
    assert [type(e) for e in errors] == [
        InvalidDifferentRecordError,
        InvalidRecordError,
        InvalidDifferentRecordError,
        InvalidRecordError,
    ]
    assert errors[1].message == "orders-0: no key"  # type: ignore[union-attr]
    assert errors[3].message == "orders-0: no key either"  # type: ignore[union-attr]
    assert "at 1, 3 in the batch" in errors[0].message  # type: ignore[union-attr]
    assert all(e.record_errors == named for e in errors)  # type: ignore[union-attr]


def test_one_named_record_fails_with_the_partitions_error_type():
    # Kafka: one record error is unambiguous, so it gets the partition-level exception type
    errors = failed(32, (RecordError(0, "Timestamp 5 of message with offset 0 is out"),), 2)
    assert isinstance(errors[0], InvalidTimestampError)
    assert isinstance(errors[1], InvalidDifferentRecordError)


def test_a_batch_error_without_record_errors_fails_every_record_alike():
    result = ProduceRequestResult(TP)
    futures = [FutureRecordMetadata(result, i, 0) for i in range(3)]
    error = error_from_code(87, "bad batch", str(TP))
    result.complete(-1, -1, error)
    assert all(f.exception(timeout=0) is error for f in futures)
    with pytest.raises(InvalidRecordError):
        futures[2].result(timeout=0)


def test_send_manys_future_names_each_failed_record_by_its_index_in_the_call():
    # two batches: the call's records 0-2 are records 1-3 of a refused batch (its record 2
    # named), records 3-4 went into a batch that was stored
    refused, stored = ProduceRequestResult(TP), ProduceRequestResult(TopicPartition("orders", 1))
    future = SendManyFuture([(refused, 1, 3, 0), (stored, 0, 2, 3)], 0)
    refused.complete(-1, -1, error_from_code(87, "summary", str(TP), (RecordError(2, "no key"),)))
    stored.complete(10, -1, None)
    errors = future.errors(timeout=0)
    assert sorted(errors) == [0, 1, 2]
    assert isinstance(errors[1], InvalidRecordError) and errors[1].message == "orders-0: no key"
    assert isinstance(errors[0], InvalidDifferentRecordError)
    assert isinstance(errors[2], InvalidDifferentRecordError)
    with pytest.raises(InvalidRecordError):
        future.result(timeout=0)
