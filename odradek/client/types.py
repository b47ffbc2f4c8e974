"""The values the SDK hands to and gets from users: partitions, delivered and fetched records.

Re-exported by :mod:`odradek` (``odradek.TopicPartition`` and so on). Immutable, hashable
(except for the byte fields' contents, which are ``bytes`` anyway), pure.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from odradek.records import TimestampType

__all__ = ["ConsumerRecord", "OffsetAndTimestamp", "RecordMetadata", "TopicPartition"]


@dataclass(frozen=True, slots=True, order=True)
class TopicPartition:
    """One partition of a topic. Orders by topic, then partition."""

    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


@dataclass(frozen=True, slots=True)
class RecordMetadata:
    """Where the broker put a record: the result of a :class:`~odradek.Producer` send future.

    ``offset`` is -1 with ``acks=0`` (the broker does not say). ``timestamp`` is the broker's
    append time for topics with ``message.timestamp.type=LogAppendTime``, else the record's
    create time.
    """

    topic: str
    partition: int
    offset: int
    timestamp: int

    @property
    def topic_partition(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)


@dataclass(frozen=True, slots=True)
class ConsumerRecord:
    """A record as :meth:`~odradek.Consumer.poll` returns it.

    ``timestamp`` is -1 for a record stored without one. ``leader_epoch`` is the epoch of the
    leader that appended the record's batch (``None`` if the batch carries none).
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


_new = object.__new__
# the slot setters in field order (the order of fetched_record's parameters)
_RECORD_SLOTS = tuple(ConsumerRecord.__dict__[f.name].__set__ for f in fields(ConsumerRecord))


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
    """``ConsumerRecord(...)`` with the same fields, for the consumer's decoding loop: a frozen
    dataclass's ``__init__`` sets each field through ``object.__setattr__``, which costs more
    than decoding the record; this sets the slots directly (a third of the time)."""
    r = _new(ConsumerRecord)
    s_topic, s_partition, s_offset, s_ts, s_type, s_key, s_value, s_headers, s_epoch = _RECORD_SLOTS
    s_topic(r, topic)
    s_partition(r, partition)
    s_offset(r, offset)
    s_ts(r, timestamp)
    s_type(r, timestamp_type)
    s_key(r, key)
    s_value(r, value)
    s_headers(r, headers)
    s_epoch(r, leader_epoch)
    return r


@dataclass(frozen=True, slots=True)
class OffsetAndTimestamp:
    """The answer of :meth:`~odradek.Consumer.offsets_for_times` for one partition: the first
    record whose timestamp is at or after the one asked for."""

    offset: int
    timestamp: int
    leader_epoch: int | None
