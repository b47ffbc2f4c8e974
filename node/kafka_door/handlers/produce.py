"""Produce (0), v3-v10 served (v0-v2 advertised, and their requests close the connection, as
Kafka 4 does: KAFKA-18659). v9+ are flexible; from v10 a partition refused
NOT_LEADER_OR_FOLLOWER names its current leader and epoch (``CurrentLeader``) and the answer
carries that leader's endpoint on the request's listener (``NodeEndpoints``), so the producer
redirects without a metadata round trip (KIP-951; :mod:`node.apis.current_leader`).

The records stay bytes: each partition's record set goes to the replica manager as sent, which
validates every batch (CRC-32C, the idempotent producer's sequence), assigns offsets and appends.
Per-partition errors are Kafka's codes (NOT_LEADER_OR_FOLLOWER, MESSAGE_TOO_LARGE,
CORRUPT_MESSAGE, INVALID_RECORD, OUT_OF_ORDER_SEQUENCE_NUMBER, ...), with from v8 the
``record_errors`` naming, by index in its batch, each record that made the batch fail (KIP-467:
records without a key for a compacted topic); a partition the principal
may not WRITE is TOPIC_AUTHORIZATION_FAILED (29) and never reaches the log. With acks=0 the
broker answers nothing (``NO_RESPONSE``), and closes the connection if any partition failed
(``KafkaApis.handleProduceRequest``: so that the producer notices and refreshes its metadata).
An acks=-1 produce is answered at once if its batches are already replicated (a partition whose
ISR is the leader alone), else it answers :class:`~node.kafka_door.server.WhenReady` once
appended: the door's loop waits for the replicas (no request thread held) while the connection
handles its next requests.
A transactional produce needs WRITE on its transactional id (53 for every partition); before
a producer's first append to a partition in a transaction the transaction coordinator is asked
whether the partition is in it (KIP-890), on a request thread (the question may cross the
network): :class:`~node.apis.records.RecordApis` holds that policy.

The handler runs on the door's event loop (``on_loop``): the append is Python work under the
GIL either way, and a request thread would add two thread hand-offs to every request's round
trip. An append that would block — a partition's or log's lock held by another thread, a segment
to roll or a flush (``flush.messages``), both of which write and fsync files — is not made there
but handed to a request thread (:class:`~node.kafka_door.server.OnThread`), before the
connection's next request is read. So is an append whose batches the topic's
``compression.type`` would recompress (milliseconds of CPU), and a request of more than
:data:`ON_LOOP_MAX_BYTES` of records: reading every record of it would hold the loop, and every
connection of the node, for milliseconds.
"""

from __future__ import annotations

from typing import Any

from node.apis.records import PRODUCE_REDIRECTS, StartedProduce
from node.core.requests import ProducePartition, ProduceResult
from node.kafka_door import views
from node.kafka_door.build import make, nested, response_class_of
from node.kafka_door.context import RequestContext
from node.kafka_door.leader_discovery import current_leader, node_endpoints
from node.kafka_door.server import CLOSE_CONNECTION, NO_RESPONSE, OnThread, WhenReady
from node.kafka_door.services import DoorServices

__all__ = ["handle_produce"]

API_KEY = 0
LEADER_DISCOVERY_SINCE = 10
"""The first Produce version whose answer names the current leader (KIP-951)."""
_RECHECK_MS = 1000
"""A waiting produce is checked at least this often (as the core's own wait does)."""
_RECORD_ERRORS_VERSION = 8
"""From this version an answer names the records that made a batch fail (KIP-467)."""
ON_LOOP_MAX_BYTES = 256 * 1024
"""The most record bytes a produce request may carry to be appended on the door's loop (the
validation reads every record: about 1 ms of the loop for this much); larger ones are appended
on a request thread."""


def handle_produce(
    services: DoorServices, ctx: RequestContext, request: views.ProduceRequestView
) -> Any:
    wanted = [
        ProducePartition(topic.name, int(p.index), bytes(p.records or b""))
        for topic in request.topic_data
        for p in topic.partition_data
    ]
    acks = int(request.acks)
    timeout_ms = int(request.timeout.total_seconds() * 1000)
    records = services.api.records
    tid = request.transactional_id
    transactional_id = None if tid is None else str(tid)
    if sum(len(p.records) for p in wanted) > ON_LOOP_MAX_BYTES:

        def append() -> Any:
            started = records.start_produce(
                ctx.caller,
                wanted,
                acks=acks,
                timeout_ms=timeout_ms,
                transactional_id=transactional_id,
            )
            return _appended(services, ctx, request, acks, started)

        return OnThread(append)
    started = records.start_produce(
        ctx.caller,
        wanted,
        acks=acks,
        timeout_ms=timeout_ms,
        transactional_id=transactional_id,
        blocking=False,
    )
    if started.deferred:  # the transaction coordinator is asked first (KIP-890): may block

        def verified() -> Any:
            again = records.start_produce(
                ctx.caller,
                wanted,
                acks=acks,
                timeout_ms=timeout_ms,
                transactional_id=transactional_id,
            )
            return _appended(services, ctx, request, acks, again)

        return OnThread(verified)
    pending = started.pending
    if pending is not None and pending.blocked:

        def append_blocked() -> Any:
            pending.append_blocked()
            return _appended(services, ctx, request, acks, started)

        return OnThread(append_blocked)
    return _appended(services, ctx, request, acks, started)


def _appended(
    services: DoorServices, ctx: RequestContext, request: Any, acks: int, started: StartedProduce
) -> Any:
    """The answer once every partition is appended: now, or :class:`WhenReady` (acks=-1)."""
    pending = started.pending
    done = [] if pending is None else pending.poll()
    if done is None:
        assert pending is not None
        # appended; the connection's next requests go on while the replicas catch up

        def poll() -> Any:
            replicated = pending.poll()
            if replicated is None:
                return None
            return _answer(services, ctx, request, started.finish(replicated))

        return WhenReady(
            poll=poll,
            subscribe=pending.subscribe,
            recheck_ms=lambda: min(pending.remaining_ms(), _RECHECK_MS),
        )
    results = started.finish(done)
    if acks == 0:
        return CLOSE_CONNECTION if any(r.error_code for r in results) else NO_RESPONSE
    return _answer(services, ctx, request, results)


def _answer(
    services: DoorServices, ctx: RequestContext, request: Any, results: list[ProduceResult]
) -> Any:
    cls = response_class_of(ctx)
    topic_cls = nested(cls, "TopicProduceResponse")
    partition_cls = nested(cls, "PartitionProduceResponse")
    record_error_cls = (
        nested(cls, "BatchIndexAndErrorMessage")
        if ctx.api_version >= _RECORD_ERRORS_VERSION
        else None
    )
    top: dict[str, Any] = {}
    if ctx.api_version >= LEADER_DISCOVERY_SINCE:
        results, endpoints = services.api.records.with_current_leaders(
            results, PRODUCE_REDIRECTS, ctx.listener
        )
        top["node_endpoints"] = node_endpoints(cls, endpoints)
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
                    record_errors=tuple(
                        make(
                            record_error_cls,
                            batch_index=e.batch_index,
                            batch_index_error_message=e.message,
                        )
                        for e in r.record_errors
                    )
                    if record_error_cls is not None
                    else (),
                    error_message=r.error_message or None,
                    **current_leader(cls, r.current_leader),
                )
            )
        topics.append(make(topic_cls, name=topic.name, partition_responses=tuple(partitions)))
    return make(cls, responses=tuple(topics), throttle_time=0, **top)
