"""The values the SDK hands to and gets from users: partitions, delivered and fetched records.

Re-exported by :mod:`odradek` (``odradek.TopicPartition`` and so on). Immutable, hashable
(except for the byte fields' contents, which are ``bytes`` anyway), pure.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from odradek.records import TimestampType

__all__ = ["ConsumerRecord", "OffsetAndTimestamp", "RecordMetadata", "TopicPartition"]


@dataclass(frozen=True, slots=True, order=True)
class TopicPartition:
    """One partition of a topic. Orders by topic, then partition."""

    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


class RecordMetadata(NamedTuple):
    """Where the broker put a record: the result of a :class:`~odradek.Producer` send future.

    ``offset`` is -1 with ``acks=0`` (the broker does not say). ``timestamp`` is the broker's
    append time for topics with ``message.timestamp.type=LogAppendTime``, else the record's
    create time.

    A named tuple, as :class:`ConsumerRecord`: one is made per record a delivery callback
    asks for, and a tuple costs a third of a frozen dataclass to make (bench/sdk.py's callback
    figure).
    """

    topic: str
    partition: int
    offset: int
    timestamp: int

    @property
    def topic_partition(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)


class ConsumerRecord(NamedTuple):
    """A record as :meth:`~odradek.Consumer.poll` returns it.

    ``timestamp`` is -1 for a record stored without one. ``leader_epoch`` is the epoch of the
    leader that appended the record's batch (``None`` if the batch carries none).

    A named tuple (as kafka-python's ``ConsumerRecord``): the consumer builds a fetch's
    records with C-level loops over decoded columns, one object per record and no Python
    call per field.
    """

    topic: str
    partition: int
    offset: int
    timestamp: int
    timestamp_type: TimestampType
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]
    leader_epoch: int | None

    @property
    def topic_partition(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)


_new = tuple.__new__


def fetched_record(
    topic: str,
    partition: int,
    offset: int,
    timestamp: int,
    timestamp_type: TimestampType,
    key: bytes | None,
    value: bytes | None,
    headers: tuple[tuple[str, bytes | None], ...],
    leader_epoch: int | None,
) -> ConsumerRecord:
    """``ConsumerRecord(...)`` with the same fields, without the named tuple's keyword
    handling (the fetch path builds records with ``tuple.__new__`` directly)."""
    return _new(
        ConsumerRecord,
        (topic, partition, offset, timestamp, timestamp_type, key, value, headers, leader_epoch),
    )


@dataclass(frozen=True, slots=True)
class OffsetAndTimestamp:
    """The answer of :meth:`~odradek.Consumer.offsets_for_times` for one partition: the first
    record whose timestamp is at or after the one asked for."""

    offset: int
    timestamp: int
    leader_epoch: int | None
