"""The consumer protocol's embedded bytes, strictly: ``ConsumerProtocolSubscription`` and
``ConsumerProtocolAssignment`` (Kafka's ``ConsumerProtocol``, schemas in
``clients/src/main/resources/common/message/ConsumerProtocol{Subscription,Assignment}.json``).

A classic member of protocol type ``consumer`` puts a subscription in each JoinGroup protocol's
metadata and gets an assignment back from SyncGroup; the coordinator reads and writes them only
to move a group between the classic protocol and KIP-848 (:mod:`.group_migration`). Both are
int16 version + fields in the classic (non-flexible) encoding, versions 0-3:

* subscription: ``Topics`` [string], ``UserData`` nullable bytes, v1+ ``OwnedPartitions``
  [{``Topic`` string, ``Partitions`` [int32]}], v2+ ``GenerationId`` int32, v3+ ``RackId``
  nullable string;
* assignment: ``AssignedPartitions`` [{``Topic`` string, ``Partitions`` [int32]}],
  ``UserData`` nullable bytes.

As Kafka reads them, a version above 3 is read as 3 and bytes after the last field are ignored
(``The current implementation assumes that future versions will not break compatibility``).
Unlike :func:`.classic_group.consumer_subscription_topics` (lenient, for describe), anything
malformed raises :class:`ConsumerProtocolError`, Kafka's ``SchemaException``.

Pure and thread-safe.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = [
    "CONSUMER_PROTOCOL_HIGHEST_VERSION",
    "ConsumerProtocolAssignment",
    "ConsumerProtocolError",
    "ConsumerProtocolSubscription",
    "decode_assignment",
    "decode_subscription",
    "decode_version",
    "encode_assignment",
]

CONSUMER_PROTOCOL_HIGHEST_VERSION = 3


class ConsumerProtocolError(ValueError):
    """Malformed consumer-protocol bytes (Kafka's ``SchemaException``)."""


@dataclass(frozen=True, slots=True)
class ConsumerProtocolSubscription:
    version: int
    topics: tuple[str, ...]
    user_data: bytes | None = None
    owned_partitions: tuple[tuple[str, tuple[int, ...]], ...] = ()
    generation_id: int = -1
    rack_id: str | None = None


@dataclass(frozen=True, slots=True)
class ConsumerProtocolAssignment:
    version: int
    assigned_partitions: tuple[tuple[str, tuple[int, ...]], ...]
    """(topic name, partitions), in the bytes' order."""
    user_data: bytes | None = None

    def partitions(self) -> dict[str, frozenset[int]]:
        """topic name → partitions (a topic named twice: the union)."""
        out: dict[str, frozenset[int]] = {}
        for topic, ps in self.assigned_partitions:
            out[topic] = out.get(topic, frozenset()) | frozenset(ps)
        return out


class _Reader:
    def __init__(self, data: bytes, what: str) -> None:
        self.data = data
        self.pos = 0
        self.what = what

    def _take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise ConsumerProtocolError(
                f"{self.what}: needs {n} bytes at byte {self.pos}, {len(self.data) - self.pos} left"
            )
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def int16(self) -> int:
        value: int = struct.unpack(">h", self._take(2))[0]
        return value

    def int32(self) -> int:
        value: int = struct.unpack(">i", self._take(4))[0]
        return value

    def nullable_string(self) -> str | None:
        n = self.int16()
        if n == -1:
            return None
        if n < 0:
            raise ConsumerProtocolError(f"{self.what}: string length {n}")
        try:
            return self._take(n).decode()
        except UnicodeDecodeError:
            raise ConsumerProtocolError(f"{self.what}: a string is not UTF-8") from None

    def string(self) -> str:
        v = self.nullable_string()
        if v is None:
            raise ConsumerProtocolError(f"{self.what}: null in a non-nullable string")
        return v

    def nullable_bytes(self) -> bytes | None:
        n = self.int32()
        if n == -1:
            return None
        if n < 0:
            raise ConsumerProtocolError(f"{self.what}: bytes length {n}")
        return self._take(n)

    def count(self) -> int:
        n = self.int32()
        if n < 0 or n > len(self.data) - self.pos:
            raise ConsumerProtocolError(f"{self.what}: array of {n} elements")
        return n

    def topic_partitions(self) -> tuple[tuple[str, tuple[int, ...]], ...]:
        out = []
        for _ in range(self.count()):
            topic = self.string()
            partitions = tuple(self.int32() for _ in range(self.count()))
            out.append((topic, partitions))
        return tuple(out)


def decode_version(data: bytes) -> int:
    """The version prefix (Kafka's ``ConsumerProtocol.deserializeVersion``). Raises
    :class:`ConsumerProtocolError` for fewer than 2 bytes."""
    return _Reader(data, "consumer protocol header").int16()


def _checked_version(version: int, what: str) -> int:
    if version < 0:
        raise ConsumerProtocolError(f"{what}: version {version}")
    return min(version, CONSUMER_PROTOCOL_HIGHEST_VERSION)


def decode_subscription(data: bytes) -> ConsumerProtocolSubscription:
    """Raises :class:`ConsumerProtocolError` for malformed bytes."""
    r = _Reader(data, "consumer protocol subscription")
    version = _checked_version(r.int16(), r.what)
    topics = tuple(r.string() for _ in range(r.count()))
    user_data = r.nullable_bytes()
    owned = r.topic_partitions() if version >= 1 else ()
    generation_id = r.int32() if version >= 2 else -1
    rack_id = r.nullable_string() if version >= 3 else None
    return ConsumerProtocolSubscription(version, topics, user_data, owned, generation_id, rack_id)


def decode_assignment(data: bytes) -> ConsumerProtocolAssignment:
    """Raises :class:`ConsumerProtocolError` for malformed bytes. Empty bytes (a member that
    joined and never synced) are read as an empty assignment, as Kafka does since KAFKA-17733."""
    if not data:
        return ConsumerProtocolAssignment(0, ())
    r = _Reader(data, "consumer protocol assignment")
    version = _checked_version(r.int16(), r.what)
    partitions = r.topic_partitions()
    user_data = r.nullable_bytes()
    return ConsumerProtocolAssignment(version, partitions, user_data)


def encode_assignment(
    partitions: Mapping[str, frozenset[int]], version: int, user_data: bytes | None = None
) -> bytes:
    """``ConsumerProtocol.serializeAssignment``: topic name → partitions, at ``version``
    (above 3: 3). Topics in name order, partitions ascending; a topic with no partitions is
    left out. Raises :class:`ConsumerProtocolError` for a negative version."""
    version = _checked_version(version, "consumer protocol assignment")
    out = bytearray(struct.pack(">h", version))
    topics = [(t, sorted(ps)) for t, ps in sorted(partitions.items()) if ps]
    out += struct.pack(">i", len(topics))
    for topic, ps in topics:
        raw = topic.encode()
        out += struct.pack(">h", len(raw)) + raw
        out += struct.pack(f">i{len(ps)}i", len(ps), *ps)
    if user_data is None:
        out += struct.pack(">i", -1)
    else:
        out += struct.pack(">i", len(user_data)) + user_data
    return bytes(out)
