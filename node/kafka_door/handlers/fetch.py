"""Fetch (1), v4-v11: a consumer's fetch, long-polled, answered from the segment files.

Whole batches from the one holding the fetch offset (the client skips the records before its
offset), up to the high watermark (``isolation_level`` 1, read committed, is the same bound here:
odradek has no transactions, so the last stable offset is the high watermark), at most
``partition_max_bytes`` per partition and ``max_bytes`` in all (the first batch always, as
Kafka's ``minOneMessage``). The replica manager waits up to ``max_wait_ms`` for ``min_bytes``.

Fetch sessions (KIP-227, v7+) are not kept: every answer is a full one with ``session_id`` 0,
which tells a client asking for a session that none was made, and it goes on with full fetches
(Kafka's ``FetchSessionHandler``). A request naming a session the door never gave
(``session_id`` ≠ 0) answers FETCH_SESSION_ID_NOT_FOUND (70); one continuing an absent session
(``session_id`` 0, ``session_epoch`` > 0) answers INVALID_FETCH_SESSION_EPOCH (71).

A partition the principal may not READ answers TOPIC_AUTHORIZATION_FAILED (29). On a plaintext
listener the records go from the page cache to the socket with sendfile.
"""

from __future__ import annotations

from typing import Any

from node.kafka_door.context import RequestContext
from node.kafka_door.fetch_encoding import FetchedPartition, encode_fetch_response
from node.kafka_door.frames import response_class
from node.kafka_door.server import FileSlice
from node.kafka_door.services import DoorServices

__all__ = ["handle_fetch"]

API_KEY = 1
FETCH_SESSION_ID_NOT_FOUND = 70
INVALID_FETCH_SESSION_EPOCH = 71
TOPIC_AUTHORIZATION_FAILED = 29


def handle_fetch(services: DoorServices, ctx: RequestContext, request: Any) -> Any:
    from node.core.requests import FetchPartition

    cls = response_class(API_KEY, ctx.api_version)
    session_id = int(getattr(request, "session_id", 0))
    session_epoch = int(getattr(request, "session_epoch", -1))
    top = {"throttle_time": 0, "error_code": 0, "session_id": 0}
    if session_id != 0 or session_epoch > 0:
        top["error_code"] = (
            FETCH_SESSION_ID_NOT_FOUND if session_id != 0 else INVALID_FETCH_SESSION_EPOCH
        )
        return encode_fetch_response(cls, top, [])
    names = {t.topic for t in request.topics}
    denied = services.auth.denied_topics(ctx.principal, ctx.connection.peer_host, "READ", names)
    wanted = [
        FetchPartition(
            topic=t.topic,
            partition=int(p.partition),
            fetch_offset=int(p.fetch_offset),
            log_start_offset=int(getattr(p, "log_start_offset", -1)),
            partition_max_bytes=int(p.partition_max_bytes),
            current_leader_epoch=int(getattr(p, "current_leader_epoch", -1)),
        )
        for t in request.topics
        if t.topic not in denied
        for p in t.partitions
    ]
    results = services.replicas.fetch(
        wanted,
        max_wait_ms=int(request.max_wait.total_seconds() * 1000),
        min_bytes=int(request.min_bytes),
        max_bytes=int(getattr(request, "max_bytes", 2**31 - 1)),
        isolation_level=int(getattr(request, "isolation_level", 0)),
        zero_copy=ctx.connection.security_protocol in ("PLAINTEXT", "SASL_PLAINTEXT"),
    )
    by_key = {(r.topic, r.partition): r for r in results}
    topics: list[tuple[str, list[FetchedPartition]]] = []
    for t in request.topics:
        partitions: list[FetchedPartition] = []
        for p in t.partitions:
            r = by_key.get((t.topic, int(p.partition)))
            if r is None:
                fields = _error_fields(int(p.partition), TOPIC_AUTHORIZATION_FAILED)
                partitions.append((fields, b""))
                continue
            fields = {
                "partition_index": r.partition,
                "error_code": r.error_code,
                "high_watermark": r.high_watermark,
                "last_stable_offset": r.high_watermark,
                "log_start_offset": r.log_start_offset,
                "aborted_transactions": None,
                "preferred_read_replica": -1,
            }
            records = r.records
            if hasattr(records, "open_fd"):
                partitions.append(
                    (fields, FileSlice(records.open_fd(), records.position, len(records)))
                )
            else:
                partitions.append((fields, bytes(records)))
        topics.append((t.topic, partitions))
    return encode_fetch_response(cls, top, topics)


def _error_fields(partition: int, error: int) -> dict[str, Any]:
    return {
        "partition_index": partition,
        "error_code": error,
        "high_watermark": -1,
        "last_stable_offset": -1,
        "log_start_offset": -1,
        "aborted_transactions": None,
        "preferred_read_replica": -1,
    }
