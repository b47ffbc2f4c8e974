"""Fetch (1), v4-v16: a consumer's fetch, long-polled, answered from the segment files.

v12+ are flexible and take the epoch of the last record the consumer fetched
(``LastFetchedEpoch``): a log that diverged from it since (a leader change truncated it) is
answered with the ``DivergingEpoch`` to truncate to, as Kafka's ``Partition.fetchRecords``.
v13+ name topics by id (an id this node does not know: UNKNOWN_TOPIC_ID, 100). v15 moves the
replica id into ``ReplicaState`` (consumers send none). From v16 a partition refused
NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH names its current leader and epoch
(``CurrentLeader``) and the answer carries that leader's endpoint on the request's listener
(``NodeEndpoints``), so the consumer redirects without a metadata round trip (KIP-951;
:mod:`node.apis.current_leader`).

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
import uuid
from typing import Any

from kio.static.primitive import i32, i64

from node.apis.records import FETCH_REDIRECTS
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
from node.kafka_door.leader_discovery import current_leader, node_endpoints
from node.kafka_door.server import CLOSE_CONNECTION, FileSlice, Later, WhenReady
from node.kafka_door.services import DoorServices
from node.kafka_door.topic_ids import topic_id_text
from storage.file_records import FileSlice as SegmentSlice

__all__ = ["handle_fetch"]

API_KEY = 1
FETCH_SESSION_ID_NOT_FOUND = 70
INVALID_FETCH_SESSION_EPOCH = 71
UNKNOWN_TOPIC_ID = 100
TOPIC_IDS_SINCE = 13
"""The first Fetch version that names topics by id."""
LEADER_DISCOVERY_SINCE = 16
"""The first Fetch version whose answer names the current leader (KIP-951)."""
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
    records = services.api.records
    names = _topic_names(services, ctx.api_version, request)
    unknown = [
        FetchResult(topic="", partition=int(p.partition), error_code=UNKNOWN_TOPIC_ID)
        for t, name in zip(request.topics, names, strict=True)
        if name is None
        for p in t.partitions
    ]
    wanted = [
        FetchPartition(
            topic=name,
            partition=int(p.partition),
            fetch_offset=int(p.fetch_offset),
            partition_max_bytes=int(p.partition_max_bytes),
            current_leader_epoch=int(getattr(p, "current_leader_epoch", -1)),
            last_fetched_epoch=int(getattr(p, "last_fetched_epoch", -1)),
            log_start_offset=int(getattr(p, "log_start_offset", -1)),
        )
        for t, name in zip(request.topics, names, strict=True)
        if name is not None
        for p in t.partitions
    ]
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
    results += unknown

    def answer(found: list[FetchResult]) -> Any:
        return _answer(services, ctx, cls, top, request, names, found)

    if not isinstance(started, PendingFetch):
        return answer(results + started)
    pending = started

    def poll() -> Any:
        if not pending.ready():
            return None
        if pending.reads_bytes:  # the bytes are read on a request thread, not the door's loop
            return Later(lambda: answer(results + pending.results()))
        return answer(results + pending.results())

    return WhenReady(
        poll=poll,
        subscribe=pending.subscribe,
        recheck_ms=lambda: min(pending.remaining_ms(), _RECHECK_MS),
    )


def _topic_names(services: DoorServices, version: int, request: Any) -> list[str | None]:
    """Each requested topic's name (v13+: by its id; ``None`` for an id this node does not
    know, as Kafka's ``metadataCache.topicIdsToNames``)."""
    if version < TOPIC_IDS_SINCE:
        return [str(t.topic) for t in request.topics]
    known = services.api.records.topic_names_by_id()
    return [known.get(topic_id_text(t.topic_id)) for t in request.topics]


def _answer(
    services: DoorServices,
    ctx: RequestContext,
    cls: Any,
    top: dict[str, Any],
    request: Any,
    names: list[str | None],
    results: list[FetchResult],
) -> Any:
    records = services.api.records
    results = records.count_fetched(results)
    if ctx.api_version >= LEADER_DISCOVERY_SINCE:
        results, endpoints = records.with_current_leaders(results, FETCH_REDIRECTS, ctx.listener)
        top = {**top, "node_endpoints": node_endpoints(cls, endpoints)}
    by_key = {(r.topic, r.partition): r for r in results}
    by_id = ctx.api_version >= TOPIC_IDS_SINCE
    topics: list[tuple[str | uuid.UUID, list[FetchedPartition]]] = []
    for t, name in zip(request.topics, names, strict=True):
        partitions: list[FetchedPartition] = []
        for p in t.partitions:
            r = by_key[("" if name is None else name, int(p.partition))]
            fields: dict[str, Any] = {
                "partition_index": r.partition,
                "error_code": r.error_code,
                "high_watermark": r.high_watermark,
                "last_stable_offset": r.last_stable_offset,
                "log_start_offset": r.log_start_offset,
                "aborted_transactions": _aborted(cls, r),
                "preferred_read_replica": -1,
            }
            if r.diverging_epoch is not None:
                fields["diverging_epoch"] = nested(cls, "EpochEndOffset")(
                    epoch=i32(r.diverging_epoch.epoch), end_offset=i64(r.diverging_epoch.end_offset)
                )
            if ctx.api_version >= LEADER_DISCOVERY_SINCE:
                fields.update(current_leader(cls, r.current_leader))
            partitions.append((fields, _records(r.records)))
        topics.append((t.topic_id if by_id else t.topic, partitions))
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
