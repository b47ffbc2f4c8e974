"""A Fetch response (v4-v16) whose record sets are written from their segment files.

kio encodes every field; only the arrays' counts and the records' length prefixes are put
together here, because the records themselves are not in memory: they are
:class:`~node.kafka_door.server.FileSlice` parts that the door writes with sendfile. In every
version the door serves, the response's ``responses`` array, a topic's ``partitions`` array and
a partition's ``records`` are the last field of their entity before its tagged fields:

* v4-v11 (not flexible): an array is an int32 count, records an int32 length (-1: null), and
  nothing follows them;
* v12-v16 (flexible): an array is an unsigned varint of its count plus one, records an unsigned
  varint of their length plus one (0: null), and the entity's tagged fields follow (the
  response's ``NodeEndpoints``, a partition's ``DivergingEpoch`` and ``CurrentLeader``).

So each entity is encoded by kio with an empty array (or empty records) and cut there: what
comes before the empty array's count, the real count or length, then the rest (the tagged
fields; nothing before v12). The cut is found by encoding the entity once more with no tagged
field set, which ends with the empty count and an empty tag section, and checked. Pure;
thread-safe.
"""

from __future__ import annotations

import dataclasses
import io
import struct
import uuid
from collections.abc import Sequence
from typing import Any

from kio.serial.writers import write_unsigned_varint
from kio.static.primitive import uvarint

from node.kafka_door.build import make, nested
from node.kafka_door.error_counts import count_error
from node.kafka_door.frames import encode_body
from node.kafka_door.server import FileSlice, ResponseParts

__all__ = ["FetchedPartition", "MAX_VERSION", "encode_fetch_response"]

MAX_VERSION = 16
"""The last Fetch version of the layouts above (v17 adds nothing a consumer's answer carries,
but is not served)."""

_INT32 = struct.Struct(">i")

FetchedPartition = tuple[dict[str, Any], bytes | FileSlice]
"""A partition's fields (Kafka's names, as :func:`~node.kafka_door.build.make` takes them) and
its records."""


def _uvarint(value: int) -> bytes:
    out = io.BytesIO()
    write_unsigned_varint(out, uvarint(value))
    return out.getvalue()


def _count(flexible: bool, count: int) -> bytes:
    """An array's count or a records length, in the version's encoding."""
    return _uvarint(count + 1) if flexible else _INT32.pack(count)


def _cut(entity: Any) -> tuple[bytes, bytes]:
    """``entity`` (its last field an empty array or empty records) encoded, split around that
    empty count: ``(before, after)``."""
    encoded = encode_body(entity)
    if not entity.__flexible__:
        if encoded[-4:] != b"\x00\x00\x00\x00":
            raise AssertionError("a Fetch entity did not end with the array or records expected")
        return encoded[:-4], b""
    bare = encode_body(_untagged(entity))
    if bare[-2:] != b"\x01\x00" or not encoded.startswith(bare[:-1]):
        raise AssertionError("a Fetch entity did not end with the array or records expected")
    return bare[:-2], encoded[len(bare) - 1 :]


def _untagged(entity: Any) -> Any:
    """``entity`` with its tagged fields at their defaults (left off the wire)."""
    defaults: dict[str, Any] = {}
    for f in dataclasses.fields(entity):
        if "tag" in f.metadata:
            if f.default is not dataclasses.MISSING:
                defaults[f.name] = f.default
            elif f.default_factory is not dataclasses.MISSING:
                defaults[f.name] = f.default_factory()
    return dataclasses.replace(entity, **defaults) if defaults else entity


def encode_fetch_response(
    cls: type[Any],
    top: dict[str, Any],
    topics: Sequence[tuple[str | uuid.UUID, Sequence[FetchedPartition]]],
) -> ResponseParts:
    """The body of ``cls`` (a FetchResponse v4-v16 class) in parts: ``top`` holds the
    response's own fields, ``topics`` each topic's name (v13+: its id) and partitions in
    request order."""
    if cls.__version__ > MAX_VERSION:
        raise ValueError(f"Fetch v{cls.__version__} is not laid out as this module expects")
    flexible = bool(cls.__flexible__)
    topic_cls = nested(cls, "FetchableTopicResponse")
    partition_cls = nested(cls, "PartitionData")
    topic_key = "topic_id" if cls.__version__ >= 13 else "topic"
    out = ResponseParts(flexible=flexible)
    errors = out.errors
    count_error(errors, top.get("error_code", 0))
    head, tail = _cut(make(cls, responses=(), **top))
    pending = bytearray(head + _count(flexible, len(topics)))
    for name, partitions in topics:
        topic_head, topic_tail = _cut(make(topic_cls, partitions=(), **{topic_key: name}))
        pending += topic_head + _count(flexible, len(partitions))
        for fields, records in partitions:
            count_error(errors, fields.get("error_code", 0))
            before, after = _cut(make(partition_cls, records=b"", **fields))
            pending += before
            if isinstance(records, FileSlice):
                pending += _count(flexible, records.length)
                out.parts.append(bytes(pending))
                pending = bytearray()
                out.parts.append(records)
            else:
                pending += _count(flexible, len(records))
                pending += records
            pending += after
        pending += topic_tail
    pending += tail
    if pending:
        out.parts.append(bytes(pending))
    return out
