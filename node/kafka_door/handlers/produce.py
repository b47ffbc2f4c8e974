"""Produce (0), v3-v8 served (v0-v2 advertised, and their requests close the connection, as
Kafka 4 does: KAFKA-18659).

The records stay bytes: each partition's record set goes to the replica manager as sent, which
validates every batch (CRC-32C, the idempotent producer's sequence), assigns offsets and appends.
Per-partition errors are Kafka's codes (NOT_LEADER_OR_FOLLOWER, MESSAGE_TOO_LARGE,
CORRUPT_MESSAGE, INVALID_RECORD, OUT_OF_ORDER_SEQUENCE_NUMBER, ...); a partition the principal
may not WRITE is TOPIC_AUTHORIZATION_FAILED (29) and never reaches the log. With acks=0 the
broker answers nothing (``NO_RESPONSE``), and closes the connection if any partition failed.
"""

from __future__ import annotations

from typing import Any

from node.kafka_door.build import make, nested
from node.kafka_door.context import RequestContext
from node.kafka_door.frames import response_class
from node.kafka_door.server import CLOSE_CONNECTION, NO_RESPONSE
from node.kafka_door.services import DoorServices

__all__ = ["handle_produce"]

API_KEY = 0


def handle_produce(services: DoorServices, ctx: RequestContext, request: Any) -> Any:
    from node.core.requests import ProducePartition

    if request.transactional_id is not None:
        # transactions are not served: Kafka answers TRANSACTIONAL_ID_AUTHORIZATION_FAILED or
        # the coordinator's error; odradek has no transaction coordinator
        refused = 53  # TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        return _answer(ctx, request, {}, refused)
    wanted = [
        (topic.name, int(p.index), bytes(p.records or b""))
        for topic in request.topic_data
        for p in topic.partition_data
    ]
    denied = services.auth.denied_topics(
        ctx.principal, ctx.connection.peer_host, "WRITE", {t for t, _, _ in wanted}
    )
    allowed = [ProducePartition(t, p, r) for t, p, r in wanted if t not in denied]
    results = services.replicas.append_records(
        allowed, acks=int(request.acks), timeout_ms=int(request.timeout.total_seconds() * 1000)
    )
    if int(request.acks) == 0:
        # no answer; but a failure closes the connection, so that the producer notices and
        # refreshes its metadata (KafkaApis.handleProduceRequest)
        failed = bool(denied) or any(r.error_code != 0 for r in results)
        return CLOSE_CONNECTION if failed else NO_RESPONSE
    by_key = {(r.topic, r.partition): r for r in results}
    return _answer(ctx, request, by_key, 0, denied)


def _answer(
    ctx: RequestContext,
    request: Any,
    results: dict[tuple[str, int], Any],
    all_error: int,
    denied: set[str] | frozenset[str] = frozenset(),
) -> Any:
    cls = response_class(API_KEY, ctx.api_version)
    topic_cls = nested(cls, "TopicProduceResponse")
    partition_cls = nested(cls, "PartitionProduceResponse")
    topics = []
    for topic in request.topic_data:
        partitions = []
        for p in topic.partition_data:
            r = results.get((topic.name, int(p.index)))
            if r is None:
                error = 29 if topic.name in denied else (all_error or 3)
                fields: dict[str, Any] = {
                    "error_code": error,
                    "base_offset": -1,
                    "log_append_time": -1,
                    "log_start_offset": -1,
                    "error_message": None,
                }
            else:
                fields = {
                    "error_code": r.error_code,
                    "base_offset": r.base_offset,
                    "log_append_time": r.log_append_time_ms,
                    "log_start_offset": r.log_start_offset,
                    "error_message": r.error_message or None,
                }
            partitions.append(make(partition_cls, index=p.index, record_errors=(), **fields))
        topics.append(make(topic_cls, name=topic.name, partition_responses=tuple(partitions)))
    return make(cls, responses=tuple(topics), throttle_time=0)
