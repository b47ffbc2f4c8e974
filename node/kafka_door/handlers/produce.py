"""Produce (0), v3-v8 served (v0-v2 advertised, and their requests close the connection, as
Kafka 4 does: KAFKA-18659).

The records stay bytes: each partition's record set goes to the replica manager as sent, which
validates every batch (CRC-32C, the idempotent producer's sequence), assigns offsets and appends.
Per-partition errors are Kafka's codes (NOT_LEADER_OR_FOLLOWER, MESSAGE_TOO_LARGE,
CORRUPT_MESSAGE, INVALID_RECORD, OUT_OF_ORDER_SEQUENCE_NUMBER, ...); a partition the principal
may not WRITE is TOPIC_AUTHORIZATION_FAILED (29) and never reaches the log. With acks=0 the
broker answers nothing (``NO_RESPONSE``), and closes the connection if any partition failed
(``KafkaApis.handleProduceRequest``: so that the producer notices and refreshes its metadata).
An acks=-1 produce is answered at once if its batches are already replicated (a partition whose
ISR is the leader alone), else it answers :class:`~node.kafka_door.server.WhenReady` once
appended: the door's loop waits for the replicas (no request thread held) while the connection
handles its next requests.
A transactional produce is refused whole with TRANSACTIONAL_ID_AUTHORIZATION_FAILED (53):
odradek has no transaction coordinator.

The handler runs on the door's event loop (``on_loop``): the append is Python work under the
GIL either way, and a request thread would add two thread hand-offs to every request's round
trip. An append that would block — a partition's or log's lock held by another thread, a segment
to roll or a flush (``flush.messages``), both of which write and fsync files — is not made there
but handed to a request thread (:class:`~node.kafka_door.server.OnThread`), before the
connection's next request is read. So is a request of more than :data:`ON_LOOP_MAX_BYTES` of
records: reading every record of it would hold the loop, and every connection of the node, for
milliseconds.
"""

from __future__ import annotations

from typing import Any

from node.core.pending_append import PendingAppend
from node.core.requests import ProducePartition, ProduceResult
from node.kafka_door.build import make, nested
from node.kafka_door.context import RequestContext
from node.kafka_door.frames import response_class
from node.kafka_door.server import CLOSE_CONNECTION, NO_RESPONSE, OnThread, WhenReady
from node.kafka_door.services import DoorServices
from node.metrics.request_metrics import record_count

__all__ = ["handle_produce"]

API_KEY = 0
TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53
_RECHECK_MS = 1000
"""A waiting produce is checked at least this often (as the core's own wait does)."""
ON_LOOP_MAX_BYTES = 256 * 1024
"""The most record bytes a produce request may carry to be appended on the door's loop (the
validation reads every record: about 1 ms of the loop for this much); larger ones are appended
on a request thread."""


def handle_produce(services: DoorServices, ctx: RequestContext, request: Any) -> Any:
    wanted = [
        ProducePartition(topic.name, int(p.index), bytes(p.records or b""))
        for topic in request.topic_data
        for p in topic.partition_data
    ]
    acks = int(request.acks)
    if request.transactional_id is not None:
        if acks == 0:
            return CLOSE_CONNECTION
        refused = TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        return _answer(
            services, ctx, request, [ProduceResult(p.topic, p.partition, refused) for p in wanted]
        )
    allowed, results = (
        (wanted, []) if services.auth is None else services.auth.produce(ctx.caller, wanted)
    )
    timeout_ms = int(request.timeout.total_seconds() * 1000)
    if sum(len(p.records) for p in allowed) > ON_LOOP_MAX_BYTES:

        def append() -> Any:
            pending = services.replicas.start_append(allowed, acks=acks, timeout_ms=timeout_ms)
            return _appended(services, ctx, request, acks, results, pending)

        return OnThread(append)
    pending = services.replicas.start_append(
        allowed, acks=acks, timeout_ms=timeout_ms, blocking=False
    )
    if pending.blocked:

        def append_blocked() -> Any:
            pending.append_blocked()
            return _appended(services, ctx, request, acks, results, pending)

        return OnThread(append_blocked)
    return _appended(services, ctx, request, acks, results, pending)


def _appended(
    services: DoorServices,
    ctx: RequestContext,
    request: Any,
    acks: int,
    results: list[ProduceResult],
    pending: PendingAppend,
) -> Any:
    """The answer once every partition is appended: now, or :class:`WhenReady` (acks=-1)."""
    done = pending.poll()
    if done is None:
        # appended; the connection's next requests go on while the replicas catch up

        def poll() -> Any:
            replicated = pending.poll()
            if replicated is None:
                return None
            return _answer(services, ctx, request, results + replicated)

        return WhenReady(
            poll=poll,
            subscribe=pending.subscribe,
            recheck_ms=lambda: min(pending.remaining_ms(), _RECHECK_MS),
        )
    results += done
    if acks == 0:
        _count(services, request, results)
        return CLOSE_CONNECTION if any(r.error_code for r in results) else NO_RESPONSE
    return _answer(services, ctx, request, results)


def _count(services: DoorServices, request: Any, results: list[ProduceResult]) -> None:
    """Bytes and records in (per topic) of the partitions appended without an error, as the
    gRPC door counts them."""
    if services.metrics is None:
        return
    failed = {(r.topic, r.partition) for r in results if r.error_code}
    services.metrics.count_produced(
        [
            (topic.name, len(p.records), record_count(p.records))
            for topic in request.topic_data
            for p in topic.partition_data
            if p.records and (topic.name, int(p.index)) not in failed
        ]
    )


def _answer(
    services: DoorServices, ctx: RequestContext, request: Any, results: list[ProduceResult]
) -> Any:
    _count(services, request, results)
    cls = response_class(API_KEY, ctx.api_version)
    topic_cls = nested(cls, "TopicProduceResponse")
    partition_cls = nested(cls, "PartitionProduceResponse")
    by_key = {(r.topic, r.partition): r for r in results}
    topics = []
    for topic in request.topic_data:
        partitions = []
        for p in topic.partition_data:
            r = by_key[(topic.name, int(p.index))]
            partitions.append(
                make(
                    partition_cls,
                    index=p.index,
                    error_code=r.error_code,
                    base_offset=r.base_offset,
                    log_append_time=r.log_append_time_ms,
                    log_start_offset=r.log_start_offset,
                    record_errors=(),
                    error_message=r.error_message or None,
                )
            )
        topics.append(make(topic_cls, name=topic.name, partition_responses=tuple(partitions)))
    return make(cls, responses=tuple(topics), throttle_time=0)
