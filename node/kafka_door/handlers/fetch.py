"""Fetch (1), v4-v11: a consumer's fetch, long-polled, answered from the segment files.

Whole batches from the one holding the fetch offset (the client skips the records before its
offset), up to the high watermark (``isolation_level`` 1, read committed: up to the last stable
offset, with the aborted transactions overlapping it, which the client drops), at most
``partition_max_bytes`` per partition and ``max_bytes`` in all (the first batch always, as
Kafka's ``minOneMessage``). A fetch short of ``min_bytes`` waits up to ``max_wait_ms`` as Kafka's
``DelayedFetch``: on the door's loop, holding no request thread (:class:`WhenReady` over the
core's :class:`~node.core.pending_fetch.PendingFetch`), so idle consumers' long polls never take
the threads that produce requests and replication need.

Fetch sessions (KIP-227, v7+) are not kept: every answer is a full one with ``session_id`` 0,
which tells a client asking for a session that none was made, and it goes on with full fetches
(Kafka's ``FetchSessionHandler``). An incremental fetch (``session_epoch`` > 0) answers
FETCH_SESSION_ID_NOT_FOUND (70) when it names a session (the door never gave one) and
INVALID_FETCH_SESSION_EPOCH (71) when it names none; a full one (epoch 0 or -1) is served
whatever session it names, as Kafka's ``FetchManager.newContext`` closes that session and
serves it.

A partition the principal may not READ answers TOPIC_AUTHORIZATION_FAILED (29). On a plaintext
listener the records go from the page cache to the socket with sendfile.
"""

from __future__ import annotations

import os
from typing import Any

from node.core.pending_fetch import PendingFetch
from node.core.requests import (
    READ_COMMITTED,
    READ_UNCOMMITTED,
    FetchPartition,
    FetchResult,
    Records,
)
from node.kafka_door import views
from node.kafka_door.build import make, nested, response_class_of
from node.kafka_door.context import RequestContext
from node.kafka_door.fetch_encoding import FetchedPartition, encode_fetch_response
from node.kafka_door.server import CLOSE_CONNECTION, FileSlice, Later, WhenReady
from node.kafka_door.services import DoorServices
from storage.file_records import FileSlice as SegmentSlice

__all__ = ["handle_fetch"]

API_KEY = 1
FETCH_SESSION_ID_NOT_FOUND = 70
INVALID_FETCH_SESSION_EPOCH = 71
_RECHECK_MS = 1000
"""A waiting fetch is checked at least this often (as the core's own wait does)."""


def handle_fetch(
    services: DoorServices, ctx: RequestContext, request: views.FetchRequestView
) -> Any:
    cls = response_class_of(ctx)
    session_id = int(getattr(request, "session_id", 0))
    session_epoch = int(getattr(request, "session_epoch", -1))
    top = {"throttle_time": 0, "error_code": 0, "session_id": 0}
    isolation_level = int(getattr(request, "isolation_level", READ_UNCOMMITTED))
    if isolation_level not in (READ_UNCOMMITTED, READ_COMMITTED):
        # Kafka's IsolationLevel.forId refuses it while parsing: the connection is closed
        return CLOSE_CONNECTION
    if session_epoch > 0:
        top["error_code"] = (
            FETCH_SESSION_ID_NOT_FOUND if session_id != 0 else INVALID_FETCH_SESSION_EPOCH
        )
        return encode_fetch_response(cls, top, [])
    wanted = [
        FetchPartition(
            topic=t.topic,
            partition=int(p.partition),
            fetch_offset=int(p.fetch_offset),
            partition_max_bytes=int(p.partition_max_bytes),
            current_leader_epoch=int(getattr(p, "current_leader_epoch", -1)),
            log_start_offset=int(getattr(p, "log_start_offset", -1)),
        )
        for t in request.topics
        for p in t.partitions
    ]
    records = services.api.records
    results, started = records.start_fetch(
        ctx.caller,
        wanted,
        max_wait_ms=int(request.max_wait.total_seconds() * 1000),
        min_bytes=int(request.min_bytes),
        max_bytes=int(getattr(request, "max_bytes", 2**31 - 1)),
        isolation_level=isolation_level,
        # plaintext: the records go from the page cache to the socket (sendfile)
        as_slices=ctx.connection.security_protocol in ("PLAINTEXT", "SASL_PLAINTEXT"),
    )
    if not isinstance(started, PendingFetch):
        return _answer(services, cls, top, request, results + started)
    pending = started

    def poll() -> Any:
        if not pending.ready():
            return None
        if pending.reads_bytes:  # the bytes are read on a request thread, not the door's loop
            return Later(lambda: _answer(services, cls, top, request, results + pending.results()))
        return _answer(services, cls, top, request, results + pending.results())

    return WhenReady(
        poll=poll,
        subscribe=pending.subscribe,
        recheck_ms=lambda: min(pending.remaining_ms(), _RECHECK_MS),
    )


def _answer(
    services: DoorServices,
    cls: Any,
    top: dict[str, Any],
    request: Any,
    results: list[FetchResult],
) -> Any:
    results = services.api.records.count_fetched(results)
    by_key = {(r.topic, r.partition): r for r in results}
    topics: list[tuple[str, list[FetchedPartition]]] = []
    for t in request.topics:
        partitions: list[FetchedPartition] = []
        for p in t.partitions:
            r = by_key[(t.topic, int(p.partition))]
            fields = {
                "partition_index": r.partition,
                "error_code": r.error_code,
                "high_watermark": r.high_watermark,
                "last_stable_offset": r.last_stable_offset,
                "log_start_offset": r.log_start_offset,
                "aborted_transactions": _aborted(cls, r),
                "preferred_read_replica": -1,
            }
            partitions.append((fields, _records(r.records)))
        topics.append((t.topic, partitions))
    return encode_fetch_response(cls, top, topics)


def _aborted(cls: Any, r: FetchResult) -> Any:
    """A read_committed answer's aborted transactions; ``None`` (read_uncommitted) is null on
    the wire."""
    if r.aborted_transactions is None:
        return None
    aborted_cls = nested(cls, "AbortedTransaction")
    return tuple(
        make(aborted_cls, producer_id=pid, first_offset=first)
        for pid, first in r.aborted_transactions
    )


def _records(records: Records) -> bytes | FileSlice:
    """A slice of a segment file goes out with sendfile from a descriptor of the door's own (the
    segment's may be closed once the segment is deleted, after ``file.delete.delay.ms``)."""
    if isinstance(records, SegmentSlice):
        return FileSlice(os.dup(records.fd), records.position, records.length)
    return records if isinstance(records, bytes) else bytes(records)
