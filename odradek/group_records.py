"""The records of ``__consumer_offsets``: keys and values in Kafka's binary schemas.

The group coordinator keeps committed offsets and KIP-848 group state as records of the
internal compacted topic ``__consumer_offsets``; ``odradek dump-log --offsets-decoder`` reads
them back. The bytes are those of Kafka's generated classes for the JSON schemas in
``group-coordinator/src/main/resources/common/message/`` (Kafka's ``CoordinatorRecordSerde``):

* key = int16 **record type** (the key schema's ``apiKey``; "version" before Kafka 4.0) followed
  by the key fields in the *classic* encoding (no key schema is flexible): ``string`` = int16
  length + UTF-8, ``int32`` big-endian.
* value = int16 **value version** followed by the value fields; a null value is a tombstone
  (compaction then removes the key). ``OffsetCommitValue`` v0-3 use the classic encoding, v4
  and every KIP-848 value (v0, ``flexibleVersions: 0+``) the *compact* one: ``string`` =
  unsigned varint (length + 1) + UTF-8 (0 = null), arrays = unsigned varint (count + 1) +
  elements, ``uuid`` = 16 bytes, and a tagged-field section (unsigned varint count, then
  tag / size / bytes) after the fields of each struct.

=====  =============================================  ===========================================
type   key                                            value
=====  =============================================  ===========================================
0, 1   OffsetCommitKey (group, topic, partition)      OffsetCommitValue v0-4
2      GroupMetadataKey (group)                       GroupMetadataValue v0-4 (classic groups;
                                                      written as v3, Kafka's choice since 2.3)
3      ConsumerGroupMetadataKey (GroupId)             ConsumerGroupMetadataValue v0
4      ConsumerGroupPartitionMetadataKey (GroupId)    ConsumerGroupPartitionMetadataValue v0
5      ConsumerGroupMemberMetadataKey (GroupId,       ConsumerGroupMemberMetadataValue v0 (tag 0:
       MemberId)                                      a classic member's ClassicMemberMetadata)
6      ConsumerGroupTargetAssignmentMetadataKey       ConsumerGroupTargetAssignmentMetadataValue
       (GroupId)                                      v0
7      ConsumerGroupTargetAssignmentMemberKey         ConsumerGroupTargetAssignmentMemberValue v0
       (GroupId, MemberId)
8      ConsumerGroupCurrentMemberAssignmentKey        ConsumerGroupCurrentMemberAssignmentValue
       (GroupId, MemberId)                            v0
11     ShareGroupMetadataKey (GroupId)                ShareGroupMetadataValue v0 (KIP-932: a share
                                                      group's epoch and metadata hash)
=====  =============================================  ===========================================

Topic ids are carried as Kafka prints a ``Uuid`` (16 bytes, URL-safe base64 without padding),
the form odradek's topic ids already take. Unknown tagged fields are skipped on decode, as
Kafka's readers do; tagged fields with their default value are not written, as Kafka's writers
do not write them.

Everything here is pure (bytes in, values out) and thread-safe. Decoders read untrusted bytes and
raise :class:`~odradek.errors.CorruptRecordError` for anything malformed; encoders raise
``ValueError`` for values their schema cannot hold.
"""

from __future__ import annotations

import base64
import enum
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeAlias, TypeVar

from odradek.errors import CorruptRecordError

__all__ = [
    "OFFSET_COMMIT_KEY_TYPE",
    "LEGACY_OFFSET_COMMIT_KEY_TYPE",
    "GROUP_METADATA_KEY_TYPE",
    "ClassicGroupMetadataKey",
    "ClassicMemberMetadata",
    "ClassicProtocol",
    "ConsumerGroupClassicMemberMetadata",
    "GroupMetadataValue",
    "ConsumerGroupCurrentMemberAssignmentKey",
    "ConsumerGroupCurrentMemberAssignmentValue",
    "ConsumerGroupMemberMetadataKey",
    "ConsumerGroupMemberMetadataValue",
    "ConsumerGroupMetadataKey",
    "ConsumerGroupMetadataValue",
    "ConsumerGroupPartitionMetadataKey",
    "ConsumerGroupPartitionMetadataValue",
    "ConsumerGroupTargetAssignmentMemberKey",
    "ConsumerGroupTargetAssignmentMemberValue",
    "ConsumerGroupTargetAssignmentMetadataKey",
    "ConsumerGroupTargetAssignmentMetadataValue",
    "GroupRecordKey",
    "GroupRecordValue",
    "MemberState",
    "OffsetCommitKey",
    "OffsetCommitValue",
    "RawValue",
    "SHARE_GROUP_METADATA_KEY_TYPE",
    "ShareGroupMetadataKey",
    "ShareGroupMetadataValue",
    "TopicMetadata",
    "TopicPartitions",
    "decode_key",
    "decode_value",
    "encode_key",
    "encode_value",
    "key_type",
    "uuid_from_bytes",
    "uuid_to_bytes",
]

LEGACY_OFFSET_COMMIT_KEY_TYPE = 0
"""Key type 0: an offset commit written by Kafka before 0.9's group metadata (same layout)."""
OFFSET_COMMIT_KEY_TYPE = 1
GROUP_METADATA_KEY_TYPE = 2
SHARE_GROUP_METADATA_KEY_TYPE = 11

_I8 = struct.Struct(">b")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")


class MemberState(enum.IntEnum):
    """A member's reconciliation state (Kafka's ``MemberState``), stored as an int8."""

    STABLE = 0
    UNREVOKED_PARTITIONS = 1
    UNRELEASED_PARTITIONS = 2
    UNKNOWN = 127


def uuid_to_bytes(topic_id: str) -> bytes:
    """The 16 bytes of a topic id printed as Kafka's ``Uuid.toString`` (URL-safe base64).

    Raises ``ValueError`` if ``topic_id`` is not 22 base64 characters for 16 bytes.
    """
    try:
        raw = base64.urlsafe_b64decode(topic_id + "==")
    except (ValueError, TypeError) as exc:
        raise ValueError(f"not a topic id: {topic_id!r}") from exc
    if len(raw) != 16 or len(topic_id) != 22:
        raise ValueError(f"not a topic id: {topic_id!r}")
    return raw


def uuid_from_bytes(raw: bytes) -> str:
    """A topic id's 16 bytes as Kafka prints them."""
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


# --- writer ------------------------------------------------------------------------------------


class _Writer:
    def __init__(self) -> None:
        self.buf = bytearray()

    def int8(self, v: int) -> None:
        self.buf += _I8.pack(v)

    def int16(self, v: int) -> None:
        self.buf += _I16.pack(v)

    def int32(self, v: int) -> None:
        self.buf += _I32.pack(v)

    def int64(self, v: int) -> None:
        self.buf += _I64.pack(v)

    def uvarint(self, v: int) -> None:
        if v < 0:
            raise ValueError(f"negative unsigned varint {v}")
        while v > 0x7F:
            self.buf.append((v & 0x7F) | 0x80)
            v >>= 7
        self.buf.append(v)

    def uuid(self, topic_id: str) -> None:
        self.buf += uuid_to_bytes(topic_id)

    def string(self, v: str | None) -> None:
        """Classic string: int16 length (-1 = null)."""
        if v is None:
            self.int16(-1)
            return
        raw = v.encode()
        if len(raw) > 0x7FFF:
            raise ValueError(f"string of {len(raw)} bytes is longer than 32767")
        self.int16(len(raw))
        self.buf += raw

    def compact_string(self, v: str | None) -> None:
        if v is None:
            self.uvarint(0)
            return
        raw = v.encode()
        if len(raw) > 0x7FFF:
            raise ValueError(f"string of {len(raw)} bytes is longer than 32767")
        self.uvarint(len(raw) + 1)
        self.buf += raw

    def compact_bytes(self, v: bytes) -> None:
        self.uvarint(len(v) + 1)
        self.buf += v

    def bytes_(self, v: bytes) -> None:
        """Classic bytes: int32 length."""
        self.int32(len(v))
        self.buf += v

    def compact_array_len(self, n: int | None) -> None:
        self.uvarint(0 if n is None else n + 1)

    def tagged(self, fields: Sequence[tuple[int, bytes]]) -> None:
        """The tagged-field section: the given ``(tag, payload)`` pairs in tag order."""
        self.uvarint(len(fields))
        for tag, payload in sorted(fields):
            self.uvarint(tag)
            self.uvarint(len(payload))
            self.buf += payload

    def no_tags(self) -> None:
        self.uvarint(0)


# --- reader ------------------------------------------------------------------------------------


class _Reader:
    def __init__(self, data: bytes, what: str) -> None:
        self.data = data
        self.pos = 0
        self.what = what

    def fail(self, why: str) -> CorruptRecordError:
        return CorruptRecordError(f"{self.what}: {why} at byte {self.pos}")

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise self.fail(f"needs {n} bytes, {len(self.data) - self.pos} left")
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def _fixed(self, s: struct.Struct) -> int:
        value: int = s.unpack(self.take(s.size))[0]
        return value

    def int8(self) -> int:
        return self._fixed(_I8)

    def int16(self) -> int:
        return self._fixed(_I16)

    def int32(self) -> int:
        return self._fixed(_I32)

    def int64(self) -> int:
        return self._fixed(_I64)

    def uvarint(self) -> int:
        value = shift = 0
        for _ in range(5):
            (b,) = self.take(1)
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                return value
            shift += 7
        raise self.fail("unsigned varint longer than 5 bytes")

    def uuid(self) -> str:
        return uuid_from_bytes(self.take(16))

    def _utf8(self, n: int) -> str:
        raw = self.take(n)
        try:
            return raw.decode()
        except UnicodeDecodeError:
            raise self.fail("string is not UTF-8") from None

    def nullable_string(self) -> str | None:
        n = self.int16()
        if n < -1:
            raise self.fail(f"string length {n}")
        return None if n == -1 else self._utf8(n)

    def string(self) -> str:
        v = self.nullable_string()
        if v is None:
            raise self.fail("null in a non-nullable string")
        return v

    def nullable_compact_string(self) -> str | None:
        n = self.uvarint()
        return None if n == 0 else self._utf8(n - 1)

    def compact_string(self) -> str:
        v = self.nullable_compact_string()
        if v is None:
            raise self.fail("null in a non-nullable string")
        return v

    def compact_bytes(self) -> bytes:
        n = self.uvarint()
        if n == 0:
            raise self.fail("null in non-nullable bytes")
        return self.take(n - 1)

    def bytes_(self) -> bytes:
        """Classic bytes: int32 length (-1, null, read as empty)."""
        n = self.int32()
        if n < -1:
            raise self.fail(f"bytes length {n}")
        return b"" if n == -1 else self.take(n)

    def array_len(self) -> int:
        """Classic array: int32 count (-1, null, read as empty)."""
        n = self.int32()
        if n < -1 or n > len(self.data) - self.pos:
            raise self.fail(f"array of {n} elements in {len(self.data) - self.pos} bytes")
        return max(n, 0)

    def compact_array_len(self) -> int | None:
        n = self.uvarint()
        if n - 1 > len(self.data) - self.pos:
            raise self.fail(f"array of {n - 1} elements in {len(self.data) - self.pos} bytes")
        return None if n == 0 else n - 1

    def compact_array(self, item: Callable[[], _T]) -> list[_T]:
        n = self.compact_array_len()
        if n is None:
            raise self.fail("null in a non-nullable array")
        return [item() for _ in range(n)]

    def tagged(self) -> dict[int, bytes]:
        """The tagged-field section: tag → payload (unknown tags are kept for the caller to
        ignore)."""
        out: dict[int, bytes] = {}
        for _ in range(self.uvarint()):
            tag = self.uvarint()
            out[tag] = self.take(self.uvarint())
        return out

    def end(self) -> None:
        if self.pos != len(self.data):
            raise self.fail(f"{len(self.data) - self.pos} bytes left over")


_T = TypeVar("_T")


# --- keys --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class OffsetCommitKey:
    """Type 1 (0 when read from a legacy record): the committed offset of one partition."""

    group: str
    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class ClassicGroupMetadataKey:
    """Type 2: a classic (pre-KIP-848) group; odradek only recognises the key."""

    group: str


@dataclass(frozen=True, slots=True)
class ConsumerGroupMetadataKey:
    """Type 3: the group epoch."""

    group_id: str


@dataclass(frozen=True, slots=True)
class ShareGroupMetadataKey:
    """Type 11: a share group (KIP-932) exists, at this epoch."""

    group_id: str


@dataclass(frozen=True, slots=True)
class ConsumerGroupPartitionMetadataKey:
    """Type 4: the subscription metadata (written by Kafka 3.7-4.0; 4.1+ hashes it instead)."""

    group_id: str


@dataclass(frozen=True, slots=True)
class ConsumerGroupMemberMetadataKey:
    """Type 5: a member's subscription and identity."""

    group_id: str
    member_id: str


@dataclass(frozen=True, slots=True)
class ConsumerGroupTargetAssignmentMetadataKey:
    """Type 6: the epoch of the target assignment."""

    group_id: str


@dataclass(frozen=True, slots=True)
class ConsumerGroupTargetAssignmentMemberKey:
    """Type 7: one member's target assignment."""

    group_id: str
    member_id: str


@dataclass(frozen=True, slots=True)
class ConsumerGroupCurrentMemberAssignmentKey:
    """Type 8: one member's current (reconciled) assignment and epoch."""

    group_id: str
    member_id: str


GroupRecordKey: TypeAlias = (
    OffsetCommitKey
    | ClassicGroupMetadataKey
    | ConsumerGroupMetadataKey
    | ConsumerGroupPartitionMetadataKey
    | ConsumerGroupMemberMetadataKey
    | ConsumerGroupTargetAssignmentMetadataKey
    | ConsumerGroupTargetAssignmentMemberKey
    | ConsumerGroupCurrentMemberAssignmentKey
    | ShareGroupMetadataKey
)

_GROUP_ONLY_KEYS: dict[type[GroupRecordKey], int] = {
    ClassicGroupMetadataKey: GROUP_METADATA_KEY_TYPE,
    ConsumerGroupMetadataKey: 3,
    ConsumerGroupPartitionMetadataKey: 4,
    ConsumerGroupTargetAssignmentMetadataKey: 6,
    ShareGroupMetadataKey: SHARE_GROUP_METADATA_KEY_TYPE,
}
_MEMBER_KEYS: dict[type[GroupRecordKey], int] = {
    ConsumerGroupMemberMetadataKey: 5,
    ConsumerGroupTargetAssignmentMemberKey: 7,
    ConsumerGroupCurrentMemberAssignmentKey: 8,
}


def encode_key(key: GroupRecordKey) -> bytes:
    """The record key bytes of ``key``. Raises ``ValueError`` for a string over 32767 bytes."""
    w = _Writer()
    match key:
        case OffsetCommitKey(group=group, topic=topic, partition=partition):
            w.int16(OFFSET_COMMIT_KEY_TYPE)
            w.string(group)
            w.string(topic)
            w.int32(partition)
        case ClassicGroupMetadataKey(group=group):
            w.int16(GROUP_METADATA_KEY_TYPE)
            w.string(group)
        case (
            ConsumerGroupMetadataKey(group_id=group_id)
            | ConsumerGroupPartitionMetadataKey(group_id=group_id)
            | ConsumerGroupTargetAssignmentMetadataKey(group_id=group_id)
            | ShareGroupMetadataKey(group_id=group_id)
        ):
            w.int16(_GROUP_ONLY_KEYS[type(key)])
            w.string(group_id)
        case (
            ConsumerGroupMemberMetadataKey(group_id=group_id, member_id=member_id)
            | ConsumerGroupTargetAssignmentMemberKey(group_id=group_id, member_id=member_id)
            | ConsumerGroupCurrentMemberAssignmentKey(group_id=group_id, member_id=member_id)
        ):
            w.int16(_MEMBER_KEYS[type(key)])
            w.string(group_id)
            w.string(member_id)
    return bytes(w.buf)


_KEY_CLASSES: dict[int, type[GroupRecordKey]] = {
    **{t: cls for cls, t in _GROUP_ONLY_KEYS.items()},
    **{t: cls for cls, t in _MEMBER_KEYS.items()},
}


def decode_key(data: bytes) -> GroupRecordKey:
    """The key ``data`` holds.

    Raises :class:`CorruptRecordError` for an unknown record type or malformed bytes.
    """
    r = _Reader(data, "__consumer_offsets key")
    record_type = r.int16()
    key: GroupRecordKey
    if record_type in (LEGACY_OFFSET_COMMIT_KEY_TYPE, OFFSET_COMMIT_KEY_TYPE):
        key = OffsetCommitKey(r.string(), r.string(), r.int32())
    elif record_type in _KEY_CLASSES:
        cls = _KEY_CLASSES[record_type]
        group = r.string()
        if cls is ClassicGroupMetadataKey:
            key = ClassicGroupMetadataKey(group)
        elif record_type in _MEMBER_KEYS.values():
            key = cls(group, r.string())  # type: ignore[call-arg]
        else:
            key = cls(group)  # type: ignore[call-arg]
    else:
        raise r.fail(f"unknown record type {record_type}")
    r.end()
    return key


def key_type(data: bytes) -> int:
    """The record type of key bytes (their first int16). Raises :class:`CorruptRecordError`."""
    return _Reader(data, "__consumer_offsets key").int16()


# --- values ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class OffsetCommitValue:
    """A committed offset. Written as v3 (v1 when ``expire_timestamp`` is set, the only version
    that holds it), as Kafka's ``OffsetCommitValue`` serialisation chooses."""

    offset: int
    metadata: str = ""
    commit_timestamp: int = -1
    leader_epoch: int = -1
    expire_timestamp: int = -1
    """A legacy explicit expiry (v1 only); -1: none, retention applies."""


@dataclass(frozen=True, slots=True)
class ConsumerGroupMetadataValue:
    epoch: int
    """The group epoch."""
    metadata_hash: int = 0
    """Tagged field 0 (Kafka 4.1+): a hash of the subscribed topics' metadata."""


@dataclass(frozen=True, slots=True)
class ShareGroupMetadataValue:
    """A share group's epoch and the hash of its subscribed topics' metadata (Kafka's
    ``ShareGroupMetadataValue`` v0: both plain fields, no tagged one)."""

    epoch: int
    metadata_hash: int = 0


@dataclass(frozen=True, slots=True)
class TopicMetadata:
    topic_id: str
    topic_name: str
    num_partitions: int
    partition_racks: tuple[tuple[int, tuple[str, ...]], ...] = ()


@dataclass(frozen=True, slots=True)
class ConsumerGroupPartitionMetadataValue:
    topics: tuple[TopicMetadata, ...]


@dataclass(frozen=True, slots=True)
class ClassicProtocol:
    """``ClassicMemberMetadata.SupportedProtocols`` element: one protocol of a classic member's
    JoinGroup (its name, e.g. an assignor, and its metadata, a ``ConsumerProtocolSubscription``
    for protocol type ``consumer``)."""

    name: str
    metadata: bytes


@dataclass(frozen=True, slots=True)
class ConsumerGroupClassicMemberMetadata:
    """Tagged field 0 of ``ConsumerGroupMemberMetadataValue`` (Kafka's nested struct
    ``ClassicMemberMetadata``): set for a member of a consumer group that speaks the classic
    protocol (Kafka 4.0's mixed groups), None for a KIP-848 member."""

    session_timeout_ms: int
    supported_protocols: tuple[ClassicProtocol, ...]
    """The member's JoinGroup protocols, in its order of preference."""


@dataclass(frozen=True, slots=True)
class ConsumerGroupMemberMetadataValue:
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    instance_id: str | None = None
    rack_id: str | None = None
    subscribed_topic_regex: str | None = None
    rebalance_timeout_ms: int = -1
    server_assignor: str | None = None
    classic_member_metadata: ConsumerGroupClassicMemberMetadata | None = None
    """Tagged field 0; None (not written) for a KIP-848 member."""


@dataclass(frozen=True, slots=True)
class TopicPartitions:
    """A topic (by id) and some of its partitions: the unit of every assignment."""

    topic_id: str
    partitions: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class ConsumerGroupTargetAssignmentMetadataValue:
    assignment_epoch: int


@dataclass(frozen=True, slots=True)
class ConsumerGroupTargetAssignmentMemberValue:
    topic_partitions: tuple[TopicPartitions, ...]


@dataclass(frozen=True, slots=True)
class ConsumerGroupCurrentMemberAssignmentValue:
    member_epoch: int
    previous_member_epoch: int
    state: MemberState
    assigned_partitions: tuple[TopicPartitions, ...]
    partitions_pending_revocation: tuple[TopicPartitions, ...] = field(default=())


@dataclass(frozen=True, slots=True)
class ClassicMemberMetadata:
    """``GroupMetadataValue.MemberMetadata``: one member of a classic group, with its
    subscription (the metadata of the group's chosen protocol) and its assignment, as the
    client encoded them (``ConsumerProtocolSubscription`` / ``ConsumerProtocolAssignment`` for
    protocol type ``consumer``)."""

    member_id: str
    client_id: str
    client_host: str
    session_timeout_ms: int
    subscription: bytes
    assignment: bytes
    instance_id: str | None = None
    rebalance_timeout_ms: int = -1


@dataclass(frozen=True, slots=True)
class GroupMetadataValue:
    """A classic group (record type 2): its generation, protocol, leader and members. An empty
    group has generation and no members (protocol and leader null)."""

    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp: int = -1
    members: tuple[ClassicMemberMetadata, ...] = ()


@dataclass(frozen=True, slots=True)
class RawValue:
    """A value odradek does not interpret: its version and bytes (decoding never gives one
    today; kept so that a caller can write bytes it read through untouched)."""

    version: int
    data: bytes


GroupRecordValue: TypeAlias = (
    OffsetCommitValue
    | ConsumerGroupMetadataValue
    | ConsumerGroupPartitionMetadataValue
    | ConsumerGroupMemberMetadataValue
    | ConsumerGroupTargetAssignmentMetadataValue
    | ConsumerGroupTargetAssignmentMemberValue
    | ConsumerGroupCurrentMemberAssignmentValue
    | GroupMetadataValue
    | ShareGroupMetadataValue
    | RawValue
)


def _write_topic_partitions(w: _Writer, items: Sequence[TopicPartitions]) -> None:
    w.compact_array_len(len(items))
    for tp in items:
        w.uuid(tp.topic_id)
        w.compact_array_len(len(tp.partitions))
        for p in tp.partitions:
            w.int32(p)
        w.no_tags()


def _read_topic_partitions(r: _Reader) -> tuple[TopicPartitions, ...]:
    def one() -> TopicPartitions:
        topic_id = r.uuid()
        partitions = tuple(r.compact_array(r.int32))
        r.tagged()  # e.g. AssignmentEpochs (KIP-1251): not used by odradek
        return TopicPartitions(topic_id, partitions)

    return tuple(r.compact_array(one))


def encode_value(value: GroupRecordValue) -> bytes:
    """The record value bytes of ``value`` (its version first).

    Raises ``ValueError`` for a value its schema cannot hold (a bad topic id, a long string).
    """
    w = _Writer()
    match value:
        case OffsetCommitValue():
            if value.expire_timestamp != -1:
                w.int16(1)
                w.int64(value.offset)
                w.string(value.metadata)
                w.int64(value.commit_timestamp)
                w.int64(value.expire_timestamp)
            else:
                w.int16(3)
                w.int64(value.offset)
                w.int32(value.leader_epoch)
                w.string(value.metadata)
                w.int64(value.commit_timestamp)
        case ConsumerGroupMetadataValue():
            w.int16(0)
            w.int32(value.epoch)
            tags: list[tuple[int, bytes]] = []
            if value.metadata_hash != 0:
                tags.append((0, _I64.pack(value.metadata_hash)))
            w.tagged(tags)
        case ShareGroupMetadataValue():
            w.int16(0)
            w.int32(value.epoch)
            w.int64(value.metadata_hash)
            w.no_tags()
        case ConsumerGroupPartitionMetadataValue():
            w.int16(0)
            w.compact_array_len(len(value.topics))
            for t in value.topics:
                w.uuid(t.topic_id)
                w.compact_string(t.topic_name)
                w.int32(t.num_partitions)
                w.compact_array_len(len(t.partition_racks))
                for partition, racks in t.partition_racks:
                    w.int32(partition)
                    w.compact_array_len(len(racks))
                    for rack in racks:
                        w.compact_string(rack)
                    w.no_tags()
                w.no_tags()
            w.no_tags()
        case ConsumerGroupMemberMetadataValue():
            w.int16(0)
            w.compact_string(value.instance_id)
            w.compact_string(value.rack_id)
            w.compact_string(value.client_id)
            w.compact_string(value.client_host)
            w.compact_array_len(len(value.subscribed_topic_names))
            for name in value.subscribed_topic_names:
                w.compact_string(name)
            w.compact_string(value.subscribed_topic_regex)
            w.int32(value.rebalance_timeout_ms)
            w.compact_string(value.server_assignor)
            classic = value.classic_member_metadata
            w.tagged([] if classic is None else [(0, _classic_member_metadata_bytes(classic))])
        case ConsumerGroupTargetAssignmentMetadataValue():
            w.int16(0)
            w.int32(value.assignment_epoch)
            w.no_tags()
        case ConsumerGroupTargetAssignmentMemberValue():
            w.int16(0)
            _write_topic_partitions(w, value.topic_partitions)
            w.no_tags()
        case ConsumerGroupCurrentMemberAssignmentValue():
            w.int16(0)
            w.int32(value.member_epoch)
            w.int32(value.previous_member_epoch)
            w.int8(int(value.state))
            _write_topic_partitions(w, value.assigned_partitions)
            _write_topic_partitions(w, value.partitions_pending_revocation)
            w.no_tags()
        case GroupMetadataValue():
            _write_group_metadata(w, value)
        case RawValue():
            w.int16(value.version)
            w.buf += value.data
    return bytes(w.buf)


def _classic_member_metadata_bytes(value: ConsumerGroupClassicMemberMetadata) -> bytes:
    """The payload of tagged field 0. A nullable struct in a tagged field is written (Kafka's
    ``MessageDataGenerator``) as an unsigned varint 1 (present; 0 = null) and then the struct:
    ``SessionTimeoutMs`` int32, ``SupportedProtocols`` compact array of {``Name`` compact
    string, ``Metadata`` compact bytes, tagged fields}, tagged fields."""
    w = _Writer()
    w.uvarint(1)
    w.int32(value.session_timeout_ms)
    w.compact_array_len(len(value.supported_protocols))
    for protocol in value.supported_protocols:
        w.compact_string(protocol.name)
        w.compact_bytes(protocol.metadata)
        w.no_tags()
    w.no_tags()
    return bytes(w.buf)


def _decode_classic_member_metadata(
    payload: bytes,
) -> ConsumerGroupClassicMemberMetadata | None:
    r = _Reader(payload, "ConsumerGroupMemberMetadataValue.ClassicMemberMetadata (tag 0)")
    if r.uvarint() == 0:
        r.end()
        return None
    session_timeout_ms = r.int32()

    def protocol() -> ClassicProtocol:
        name = r.compact_string()
        metadata = r.compact_bytes()
        r.tagged()
        return ClassicProtocol(name, metadata)

    protocols = tuple(r.compact_array(protocol))
    r.tagged()
    r.end()
    return ConsumerGroupClassicMemberMetadata(session_timeout_ms, protocols)


GROUP_METADATA_VALUE_VERSION = 3
"""The version Kafka writes (``MetadataVersion.groupMetadataValueVersion``: the highest
non-flexible one)."""


def _write_group_metadata(w: _Writer, value: GroupMetadataValue) -> None:
    w.int16(GROUP_METADATA_VALUE_VERSION)
    w.string(value.protocol_type)
    w.int32(value.generation)
    w.string(value.protocol)
    w.string(value.leader)
    w.int64(value.current_state_timestamp)
    w.int32(len(value.members))
    for m in value.members:
        w.string(m.member_id)
        w.string(m.instance_id)
        w.string(m.client_id)
        w.string(m.client_host)
        w.int32(m.rebalance_timeout_ms)
        w.int32(m.session_timeout_ms)
        w.bytes_(m.subscription)
        w.bytes_(m.assignment)


def _decode_group_metadata(r: _Reader, version: int) -> GroupMetadataValue:
    """v0-3 in the classic encoding, v4 (flexible) in the compact one."""
    if not 0 <= version <= 4:
        raise r.fail(f"unknown GroupMetadataValue version {version}")
    flexible = version >= 4

    def string() -> str:
        return r.compact_string() if flexible else r.string()

    def nullable() -> str | None:
        return r.nullable_compact_string() if flexible else r.nullable_string()

    def blob() -> bytes:
        return r.compact_bytes() if flexible else r.bytes_()

    protocol_type = string()
    generation = r.int32()
    protocol = nullable()
    leader = nullable()
    timestamp = r.int64() if version >= 2 else -1

    def member() -> ClassicMemberMetadata:
        member_id = string()
        instance_id = nullable() if version >= 3 else None
        client_id = string()
        client_host = string()
        rebalance_timeout = r.int32() if version >= 1 else -1
        session_timeout = r.int32()
        subscription = blob()
        assignment = blob()
        if flexible:
            r.tagged()
        return ClassicMemberMetadata(
            member_id,
            client_id,
            client_host,
            session_timeout,
            subscription,
            assignment,
            instance_id,
            rebalance_timeout,
        )

    if flexible:
        members = r.compact_array(member)
        r.tagged()
    else:
        members = [member() for _ in range(r.array_len())]
    return GroupMetadataValue(
        protocol_type, generation, protocol, leader, timestamp, tuple(members)
    )


def _decode_offset_commit(r: _Reader, version: int) -> OffsetCommitValue:
    if not 0 <= version <= 4:
        raise r.fail(f"unknown OffsetCommitValue version {version}")
    offset = r.int64()
    leader_epoch = r.int32() if version >= 3 else -1
    metadata = r.compact_string() if version >= 4 else r.string()
    commit_timestamp = r.int64()
    expire_timestamp = r.int64() if version == 1 else -1
    if version >= 4:
        r.tagged()
    return OffsetCommitValue(offset, metadata, commit_timestamp, leader_epoch, expire_timestamp)


def _decode_member_metadata(r: _Reader) -> ConsumerGroupMemberMetadataValue:
    instance_id = r.nullable_compact_string()
    rack_id = r.nullable_compact_string()
    client_id = r.compact_string()
    client_host = r.compact_string()
    topics = tuple(r.compact_array(r.compact_string))
    regex = r.nullable_compact_string()
    rebalance_timeout_ms = r.int32()
    assignor = r.nullable_compact_string()
    tags = r.tagged()
    classic = _decode_classic_member_metadata(tags[0]) if 0 in tags else None
    return ConsumerGroupMemberMetadataValue(
        client_id,
        client_host,
        topics,
        instance_id,
        rack_id,
        regex,
        rebalance_timeout_ms,
        assignor,
        classic,
    )


def _decode_partition_metadata(r: _Reader) -> ConsumerGroupPartitionMetadataValue:
    def rack_entry() -> tuple[int, tuple[str, ...]]:
        partition = r.int32()
        racks = tuple(r.compact_array(r.compact_string))
        r.tagged()
        return partition, racks

    def topic() -> TopicMetadata:
        topic_id = r.uuid()
        name = r.compact_string()
        num = r.int32()
        racks = tuple(r.compact_array(rack_entry))
        r.tagged()
        return TopicMetadata(topic_id, name, num, racks)

    topics = tuple(r.compact_array(topic))
    r.tagged()
    return ConsumerGroupPartitionMetadataValue(topics)


def decode_value(record_type: int, data: bytes | None) -> GroupRecordValue | None:
    """The value of a record whose key has type ``record_type``; None for a tombstone.

    Raises :class:`CorruptRecordError` for an unknown type or version, or malformed bytes.
    """
    if data is None:
        return None
    r = _Reader(data, f"__consumer_offsets value (record type {record_type})")
    version = r.int16()
    value: GroupRecordValue
    if record_type in (LEGACY_OFFSET_COMMIT_KEY_TYPE, OFFSET_COMMIT_KEY_TYPE):
        value = _decode_offset_commit(r, version)
    elif record_type == GROUP_METADATA_KEY_TYPE:
        value = _decode_group_metadata(r, version)
    elif record_type in _KEY_CLASSES:
        if version != 0:
            raise r.fail(f"unknown value version {version}")
        if record_type == 3:
            epoch = r.int32()
            tags = r.tagged()
            metadata_hash = _I64.unpack(tags[0])[0] if len(tags.get(0, b"")) == 8 else 0
            value = ConsumerGroupMetadataValue(epoch, metadata_hash)
        elif record_type == SHARE_GROUP_METADATA_KEY_TYPE:
            epoch = r.int32()
            metadata_hash = r.int64()
            r.tagged()
            value = ShareGroupMetadataValue(epoch, metadata_hash)
        elif record_type == 4:
            value = _decode_partition_metadata(r)
        elif record_type == 5:
            value = _decode_member_metadata(r)
        elif record_type == 6:
            epoch = r.int32()
            r.tagged()
            value = ConsumerGroupTargetAssignmentMetadataValue(epoch)
        elif record_type == 7:
            tps = _read_topic_partitions(r)
            r.tagged()
            value = ConsumerGroupTargetAssignmentMemberValue(tps)
        else:
            member_epoch = r.int32()
            previous = r.int32()
            raw_state = r.int8()
            try:
                state = MemberState(raw_state)
            except ValueError:
                raise r.fail(f"unknown member state {raw_state}") from None
            assigned = _read_topic_partitions(r)
            pending = _read_topic_partitions(r)
            r.tagged()
            value = ConsumerGroupCurrentMemberAssignmentValue(
                member_epoch, previous, state, assigned, pending
            )
    else:
        raise r.fail(f"unknown record type {record_type}")
    r.end()
    return value
