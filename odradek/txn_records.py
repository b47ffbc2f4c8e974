"""The records of ``__transaction_state``: keys and values in Kafka's binary schemas.

The transaction coordinator keeps each transactional id's state as a record of the internal
compacted topic ``__transaction_state``, keyed by the id; ``odradek dump-log`` reads them back.
The bytes are those of Kafka's generated classes for ``TransactionLogKey.json`` and
``TransactionLogValue.json`` (apache/kafka ``transaction-coordinator/src/main/resources/
common/message/``, read by ``TransactionLog.readTxnRecordKey`` / ``readTxnRecordValue``):

* key = int16 version (0) followed by ``TransactionalId`` as a classic string (int16 length +
  UTF-8);
* value = int16 version followed by the fields; a null value is a tombstone (an expired
  transactional id). Version 0 is the classic encoding: ``ProducerId`` int64, ``ProducerEpoch``
  int16, ``TransactionTimeoutMs`` int32, ``TransactionStatus`` int8 (Kafka's
  ``TransactionState`` ids, :class:`TransactionStatus`), ``TransactionPartitions`` a nullable
  int32-counted array of (``Topic`` string, ``PartitionIds`` int32-counted int32s),
  ``TransactionLastUpdateTimestampMs`` int64, ``TransactionStartTimestampMs`` int64. Version 1
  (flexible) has the same fields in the compact encoding and tagged fields
  ``PreviousProducerId`` (0), ``NextProducerId`` (1) and ``ClientTransactionVersion`` (2).

odradek writes version 0, as Kafka does for clients of transaction version 1 (every client
odradek serves), and reads both. Pure (bytes in, values out) and thread-safe; decoders raise
:class:`~odradek.errors.CorruptRecordError` for malformed bytes, encoders ``ValueError`` for
values the schema cannot hold.
"""

from __future__ import annotations

import enum
import struct
from dataclasses import dataclass

from odradek.errors import CorruptRecordError
from odradek.group_records import _Reader, _Writer

__all__ = [
    "TRANSACTION_STATE_TOPIC",
    "TransactionLogKey",
    "TransactionLogValue",
    "TransactionStatus",
    "decode_txn_key",
    "decode_txn_value",
    "encode_txn_key",
    "encode_txn_value",
]

TRANSACTION_STATE_TOPIC = "__transaction_state"
_I64 = struct.Struct(">q")


class TransactionStatus(enum.IntEnum):
    """Kafka's ``TransactionState`` ids, as stored; :attr:`kafka_name` is the name
    DescribeTransactions and ListTransactions give."""

    EMPTY = 0
    ONGOING = 1
    PREPARE_COMMIT = 2
    PREPARE_ABORT = 3
    COMPLETE_COMMIT = 4
    COMPLETE_ABORT = 5
    DEAD = 6
    PREPARE_EPOCH_FENCE = 7

    @property
    def kafka_name(self) -> str:
        return "".join(part.capitalize() for part in self.name.split("_"))

    @classmethod
    def from_kafka_name(cls, name: str) -> TransactionStatus:
        """The state a ListTransactions state filter names (``Ongoing``, ``PrepareCommit``,
        ...; case-sensitive, as Kafka's ``TransactionState.fromName``). Raises ``ValueError``."""
        for status in cls:
            if status.kafka_name == name:
                return status
        raise ValueError(f"unknown transaction state {name!r}")


@dataclass(frozen=True, slots=True)
class TransactionLogKey:
    transactional_id: str


@dataclass(frozen=True, slots=True)
class TransactionLogValue:
    """One transactional id's state. ``partitions``: (topic, partition) pairs, sorted when
    written."""

    producer_id: int
    producer_epoch: int
    transaction_timeout_ms: int
    status: TransactionStatus
    partitions: tuple[tuple[str, int], ...]
    last_update_timestamp_ms: int
    start_timestamp_ms: int
    previous_producer_id: int = -1
    """v1's tag 0 (transaction version 2's epoch overflow); -1 when absent."""
    next_producer_id: int = -1
    """v1's tag 1; -1 when absent."""
    client_transaction_version: int = 0
    """v1's tag 2; 0 (transaction version 1) when absent."""


def encode_txn_key(key: TransactionLogKey) -> bytes:
    w = _Writer()
    w.int16(0)
    w.string(key.transactional_id)
    return bytes(w.buf)


def decode_txn_key(data: bytes) -> TransactionLogKey:
    r = _Reader(data, "transaction log key")
    version = r.int16()
    if version != 0:
        raise r.fail(f"unknown key version {version}")
    key = TransactionLogKey(r.string())
    r.end()
    return key


def _grouped(partitions: tuple[tuple[str, int], ...]) -> list[tuple[str, list[int]]]:
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(set(partitions)):
        by_topic.setdefault(topic, []).append(partition)
    return list(by_topic.items())


def encode_txn_value(value: TransactionLogValue | None) -> bytes | None:
    """Version 0 bytes, or ``None`` for a tombstone."""
    if value is None:
        return None
    w = _Writer()
    w.int16(0)
    w.int64(value.producer_id)
    w.int16(value.producer_epoch)
    w.int32(value.transaction_timeout_ms)
    w.int8(int(value.status))
    grouped = _grouped(value.partitions)
    w.int32(len(grouped))
    for topic, ids in grouped:
        w.string(topic)
        w.int32(len(ids))
        for p in ids:
            w.int32(p)
    w.int64(value.last_update_timestamp_ms)
    w.int64(value.start_timestamp_ms)
    return bytes(w.buf)


def _status(r: _Reader) -> TransactionStatus:
    raw = r.int8()
    try:
        return TransactionStatus(raw)
    except ValueError:
        raise r.fail(f"unknown transaction status {raw}") from None


def decode_txn_value(data: bytes | None) -> TransactionLogValue | None:
    """A value of either version; ``None`` for a tombstone."""
    if data is None:
        return None
    r = _Reader(data, "transaction log value")
    version = r.int16()
    if version == 0:
        producer_id = r.int64()
        epoch = r.int16()
        timeout = r.int32()
        status = _status(r)
        partitions: list[tuple[str, int]] = []
        n = r.int32()
        if n < -1 or n > len(data):
            raise r.fail(f"array of {n} topics")
        for _ in range(max(n, 0)):
            topic = r.string()
            partitions += [(topic, r.int32()) for _ in range(r.array_len())]
        value = TransactionLogValue(
            producer_id, epoch, timeout, status, tuple(partitions), r.int64(), r.int64()
        )
        r.end()
        return value
    if version == 1:
        producer_id = r.int64()
        epoch = r.int16()
        timeout = r.int32()
        status = _status(r)
        partitions = []
        topics = r.compact_array_len()
        for _ in range(topics or 0):
            topic = r.compact_string()
            ids = r.compact_array(r.int32)
            r.tagged()
            partitions += [(topic, p) for p in ids]
        last_update = r.int64()
        start = r.int64()
        tags = r.tagged()
        r.end()

        def int64_tag(tag: int, default: int) -> int:
            raw = tags.get(tag)
            if raw is None:
                return default
            if len(raw) != 8:
                raise CorruptRecordError(f"transaction log value: tag {tag} of {len(raw)} bytes")
            (v,) = _I64.unpack(raw)
            return int(v)

        version_tag = tags.get(2)
        client_version = 0
        if version_tag is not None:
            if len(version_tag) != 2:
                raise CorruptRecordError("transaction log value: tag 2 is not an int16")
            client_version = int.from_bytes(version_tag, "big", signed=True)
        return TransactionLogValue(
            producer_id,
            epoch,
            timeout,
            status,
            tuple(partitions),
            last_update,
            start,
            previous_producer_id=int64_tag(0, -1),
            next_producer_id=int64_tag(1, -1),
            client_transaction_version=client_version,
        )
    raise r.fail(f"unknown value version {version}")
