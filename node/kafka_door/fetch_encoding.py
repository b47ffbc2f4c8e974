"""A Fetch response (v4-v11) whose record sets are written from their segment files.

kio encodes every field; only the arrays' counts and the records' length prefixes are put
together here, because the records themselves are not in memory: they are
:class:`~node.kafka_door.server.FileSlice` parts that the door writes with sendfile. This is
exact for the non-flexible versions the door serves (v4-v11), in which:

* the response ends with its ``responses`` array (int32 count, then the topics),
* a topic ends with its ``partitions`` array (int32 count, then the partitions),
* a partition ends with ``records`` (int32 length, then the bytes; -1 for null).

So each entity is encoded by kio with an empty array (or empty records), and its last four
bytes — the int32 zero kio wrote — are replaced by the real count or length. Pure; thread-safe.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any

from node.kafka_door.build import make, nested
from node.kafka_door.error_counts import count_error
from node.kafka_door.frames import encode_body
from node.kafka_door.server import FileSlice, ResponseParts

__all__ = ["FetchedPartition", "MAX_VERSION", "encode_fetch_response"]

MAX_VERSION = 11
"""The last Fetch version of the layout above (v12 is flexible: tagged fields follow)."""

_INT32 = struct.Struct(">i")

FetchedPartition = tuple[dict[str, Any], bytes | FileSlice]
"""A partition's fields (Kafka's names, as :func:`~node.kafka_door.build.make` takes them) and
its records."""


def _patched(encoded: bytes, count: int) -> bytes:
    if encoded[-4:] != b"\x00\x00\x00\x00":
        raise AssertionError("a Fetch entity did not end with the array or records expected")
    return encoded[:-4] + _INT32.pack(count)


def encode_fetch_response(
    cls: type[Any],
    top: dict[str, Any],
    topics: Sequence[tuple[str, Sequence[FetchedPartition]]],
) -> ResponseParts:
    """The body of ``cls`` (a FetchResponse v4-v11 class) in parts: ``top`` holds the
    response's own fields, ``topics`` each topic's name and partitions in request order."""
    if cls.__version__ > MAX_VERSION or cls.__flexible__:
        raise ValueError(f"Fetch v{cls.__version__} is not laid out as this module expects")
    topic_cls = nested(cls, "FetchableTopicResponse")
    partition_cls = nested(cls, "PartitionData")
    out = ResponseParts(flexible=False)
    errors = out.errors
    count_error(errors, top.get("error_code", 0))
    pending = bytearray(_patched(encode_body(make(cls, responses=(), **top)), len(topics)))
    for name, partitions in topics:
        pending += _patched(
            encode_body(make(topic_cls, topic=name, partitions=())), len(partitions)
        )
        for fields, records in partitions:
            count_error(errors, fields.get("error_code", 0))
            pending += encode_body(make(partition_cls, records=b"", **fields))[:-4]
            if isinstance(records, FileSlice):
                pending += _INT32.pack(records.length)
                out.parts.append(bytes(pending))
                pending = bytearray()
                out.parts.append(records)
            else:
                pending += _INT32.pack(len(records))
                pending += records
    if pending:
        out.parts.append(bytes(pending))
    return out
