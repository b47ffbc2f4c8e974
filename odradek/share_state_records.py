"""The records of ``__share_group_state``: keys and values in Kafka's binary schemas.

The share coordinator keeps each share partition's durable state (KIP-932) as records of the
internal compacted topic ``__share_group_state``, keyed by the share partition; ``odradek
dump-log --share-group-state-decoder`` reads them back. The bytes are those of Kafka's
generated classes for ``ShareSnapshotKey/Value.json`` and ``ShareUpdateKey/Value.json``
(apache/kafka ``share-coordinator/src/main/resources/common/message/``):

* key = int16 record type — 0 for a *snapshot* (the whole state), 1 for an *update* (batches
  to merge into the last snapshot) — then ``GroupId`` (classic string: int16 length + UTF-8),
  ``TopicId`` (16-byte UUID) and ``Partition`` (int32);
* snapshot value = int16 version (0), then, flexible (compact arrays, tagged fields):
  ``SnapshotEpoch`` int32, ``StateEpoch`` int32, ``LeaderEpoch`` int32, ``StartOffset`` int64,
  ``CreateTimestamp`` int64, ``WriteTimestamp`` int64, ``StateBatches`` a compact array of
  (``FirstOffset`` int64, ``LastOffset`` int64, ``DeliveryState`` int8, ``DeliveryCount``
  int16, tagged fields), tagged fields;
* update value = int16 version (0), then, flexible: ``SnapshotEpoch`` int32, ``LeaderEpoch``
  int32, ``StartOffset`` int64 (-1: unchanged), ``StateBatches`` as above, tagged fields;
* a null value is a tombstone: the share partition's state was deleted, and compaction
  forgets it.

``DeliveryState`` holds Kafka's ``RecordState`` ids (0 available, 2 acknowledged, 4
archived). odradek writes snapshots only; it reads both kinds (an update merges into the
snapshot before it). Pure (bytes in, values out) and thread-safe; decoders raise
:class:`~odradek.errors.CorruptRecordError` for malformed bytes, encoders ``ValueError`` for
values the schema cannot hold.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from odradek.errors import CorruptRecordError
from odradek.group_records import _Reader, _Writer

__all__ = [
    "SHARE_GROUP_STATE_TOPIC",
    "SHARE_SNAPSHOT_KEY_TYPE",
    "SHARE_UPDATE_KEY_TYPE",
    "ShareStateBatchRecord",
    "ShareStateKey",
    "ShareStateValue",
    "decode_share_key",
    "decode_share_value",
    "encode_share_key",
    "encode_share_value",
]

SHARE_GROUP_STATE_TOPIC = "__share_group_state"
SHARE_SNAPSHOT_KEY_TYPE = 0
SHARE_UPDATE_KEY_TYPE = 1


@dataclass(frozen=True, slots=True)
class ShareStateKey:
    """A record's key: which share partition, and whether the value is a snapshot or an
    update."""

    group_id: str
    topic_id: str  # a UUID's string
    partition: int
    record_type: int = SHARE_SNAPSHOT_KEY_TYPE


@dataclass(frozen=True, slots=True)
class ShareStateBatchRecord:
    first_offset: int
    last_offset: int
    delivery_state: int
    delivery_count: int


@dataclass(frozen=True, slots=True)
class ShareStateValue:
    """A snapshot's value, or an update's (``state_epoch``, ``create_timestamp`` and
    ``write_timestamp`` are not in an update: -1 there)."""

    snapshot_epoch: int
    state_epoch: int
    leader_epoch: int
    start_offset: int
    batches: tuple[ShareStateBatchRecord, ...] = field(default_factory=tuple)
    create_timestamp: int = -1
    write_timestamp: int = -1


def encode_share_key(key: ShareStateKey) -> bytes:
    if key.record_type not in (SHARE_SNAPSHOT_KEY_TYPE, SHARE_UPDATE_KEY_TYPE):
        raise ValueError(f"unknown share state record type {key.record_type}")
    w = _Writer()
    w.int16(key.record_type)
    w.string(key.group_id)
    w.uuid(key.topic_id)
    w.int32(key.partition)
    return bytes(w.buf)


def decode_share_key(data: bytes) -> ShareStateKey:
    r = _Reader(data, "__share_group_state key")
    record_type = r.int16()
    if record_type not in (SHARE_SNAPSHOT_KEY_TYPE, SHARE_UPDATE_KEY_TYPE):
        raise r.fail(f"unknown record type {record_type}")
    key = ShareStateKey(r.string(), r.uuid(), r.int32(), record_type)
    r.end()
    return key


def _write_batches(w: _Writer, batches: tuple[ShareStateBatchRecord, ...]) -> None:
    w.compact_array_len(len(batches))
    for b in batches:
        w.int64(b.first_offset)
        w.int64(b.last_offset)
        w.int8(b.delivery_state)
        w.int16(b.delivery_count)
        w.no_tags()


def encode_share_value(record_type: int, value: ShareStateValue | None) -> bytes | None:
    """The value bytes of a ``record_type`` record (None for a tombstone)."""
    if value is None:
        return None
    w = _Writer()
    w.int16(0)
    if record_type == SHARE_SNAPSHOT_KEY_TYPE:
        w.int32(value.snapshot_epoch)
        w.int32(value.state_epoch)
        w.int32(value.leader_epoch)
        w.int64(value.start_offset)
        w.int64(value.create_timestamp)
        w.int64(value.write_timestamp)
    elif record_type == SHARE_UPDATE_KEY_TYPE:
        w.int32(value.snapshot_epoch)
        w.int32(value.leader_epoch)
        w.int64(value.start_offset)
    else:
        raise ValueError(f"unknown share state record type {record_type}")
    _write_batches(w, value.batches)
    w.no_tags()
    return bytes(w.buf)


def decode_share_value(record_type: int, data: bytes | None) -> ShareStateValue | None:
    """The value of a ``record_type`` record (None: a tombstone)."""
    if data is None:
        return None
    r = _Reader(data, "__share_group_state value")
    version = r.int16()
    if version != 0:
        raise r.fail(f"unknown value version {version}")
    if record_type == SHARE_SNAPSHOT_KEY_TYPE:
        snapshot_epoch, state_epoch, leader_epoch = r.int32(), r.int32(), r.int32()
        start_offset, created, written = r.int64(), r.int64(), r.int64()
    elif record_type == SHARE_UPDATE_KEY_TYPE:
        snapshot_epoch, leader_epoch, start_offset = r.int32(), r.int32(), r.int64()
        state_epoch = created = written = -1
    else:
        raise CorruptRecordError(f"unknown share state record type {record_type}")

    def batch() -> ShareStateBatchRecord:
        out = ShareStateBatchRecord(r.int64(), r.int64(), r.int8(), r.int16())
        r.tagged()
        return out

    batches = tuple(r.compact_array(batch))
    r.tagged()
    r.end()
    return ShareStateValue(
        snapshot_epoch, state_epoch, leader_epoch, start_offset, batches, created, written
    )
