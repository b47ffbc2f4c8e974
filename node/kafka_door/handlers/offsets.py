"""ListOffsets (2) v1-v5, OffsetForLeaderEpoch (23) v2-v3 and DeleteRecords (21) v0-v1.

ListOffsets: the special timestamps are Kafka's — -2 earliest, -1 latest (the high watermark
for a consumer), -3 the record with the largest timestamp (KIP-734), -4 the earliest local
offset (no tiered storage here: the earliest); any other timestamp below -4 answers
INVALID_REQUEST... as the replica manager decides. A partition the principal may not DESCRIBE
answers TOPIC_AUTHORIZATION_FAILED (29). DeleteRecords needs DELETE on the topic.
"""

from __future__ import annotations

from typing import Any

from node.kafka_door.build import make, nested
from node.kafka_door.context import RequestContext
from node.kafka_door.frames import response_class
from node.kafka_door.services import DoorServices

__all__ = ["handle_delete_records", "handle_list_offsets", "handle_offset_for_leader_epoch"]

TOPIC_AUTHORIZATION_FAILED = 29


def handle_list_offsets(services: DoorServices, ctx: RequestContext, request: Any) -> Any:
    from node.core.requests import ListOffsetsPartition

    names = {t.name for t in request.topics}
    denied = services.auth.denied_topics(ctx.principal, ctx.connection.peer_host, "DESCRIBE", names)
    wanted = [
        ListOffsetsPartition(
            topic=t.name,
            partition=int(p.partition_index),
            timestamp=int(p.timestamp),
            current_leader_epoch=int(getattr(p, "current_leader_epoch", -1)),
        )
        for t in request.topics
        if t.name not in denied
        for p in t.partitions
    ]
    results = services.replicas.list_offsets(
        wanted, isolation_level=int(getattr(request, "isolation_level", 0))
    )
    by_key = {(r.topic, r.partition): r for r in results}
    cls = response_class(2, ctx.api_version)
    topic_cls = nested(cls, "ListOffsetsTopicResponse")
    partition_cls = nested(cls, "ListOffsetsPartitionResponse")
    topics = []
    for t in request.topics:
        partitions = []
        for p in t.partitions:
            r = by_key.get((t.name, int(p.partition_index)))
            if r is None:
                fields: dict[str, Any] = {"error_code": TOPIC_AUTHORIZATION_FAILED}
            else:
                fields = {
                    "error_code": r.error_code,
                    "timestamp": r.timestamp,
                    "offset": r.offset,
                    "leader_epoch": r.leader_epoch,
                }
            partitions.append(make(partition_cls, partition_index=p.partition_index, **fields))
        topics.append(make(topic_cls, name=t.name, partitions=tuple(partitions)))
    return make(cls, throttle_time=0, topics=tuple(topics))


def handle_offset_for_leader_epoch(
    services: DoorServices, ctx: RequestContext, request: Any
) -> Any:
    from node.core.requests import EpochRequest

    names = {t.topic for t in request.topics}
    denied = services.auth.denied_topics(ctx.principal, ctx.connection.peer_host, "DESCRIBE", names)
    wanted = [
        EpochRequest(
            topic=t.topic,
            partition=int(p.partition),
            leader_epoch=int(p.leader_epoch),
            current_leader_epoch=int(getattr(p, "current_leader_epoch", -1)),
        )
        for t in request.topics
        if t.topic not in denied
        for p in t.partitions
    ]
    results = services.replicas.offset_for_leader_epoch(wanted)
    by_key = {(r.topic, r.partition): r for r in results}
    cls = response_class(23, ctx.api_version)
    topic_cls = nested(cls, "OffsetForLeaderTopicResult")
    partition_cls = nested(cls, "EpochEndOffset")
    topics = []
    for t in request.topics:
        partitions = []
        for p in t.partitions:
            r = by_key.get((t.topic, int(p.partition)))
            if r is None:
                fields: dict[str, Any] = {"error_code": TOPIC_AUTHORIZATION_FAILED}
            else:
                fields = {
                    "error_code": r.error_code,
                    "leader_epoch": r.leader_epoch,
                    "end_offset": r.end_offset,
                }
            partitions.append(make(partition_cls, partition=p.partition, **fields))
        topics.append(make(topic_cls, topic=t.topic, partitions=tuple(partitions)))
    return make(cls, throttle_time=0, topics=tuple(topics))


def handle_delete_records(services: DoorServices, ctx: RequestContext, request: Any) -> Any:
    from node.core.requests import DeleteRecordsPartition

    names = {t.name for t in request.topics}
    denied = services.auth.denied_topics(ctx.principal, ctx.connection.peer_host, "DELETE", names)
    wanted = [
        DeleteRecordsPartition(topic=t.name, partition=int(p.partition_index), offset=int(p.offset))
        for t in request.topics
        if t.name not in denied
        for p in t.partitions
    ]
    results = services.replicas.delete_records(
        wanted, timeout_ms=int(request.timeout.total_seconds() * 1000)
    )
    by_key = {(r.topic, r.partition): r for r in results}
    cls = response_class(21, ctx.api_version)
    topic_cls = nested(cls, "DeleteRecordsTopicResult")
    partition_cls = nested(cls, "DeleteRecordsPartitionResult")
    topics = []
    for t in request.topics:
        partitions = []
        for p in t.partitions:
            r = by_key.get((t.name, int(p.partition_index)))
            error = TOPIC_AUTHORIZATION_FAILED if r is None else r.error_code
            low = -1 if r is None else r.low_watermark
            partitions.append(
                make(
                    partition_cls,
                    partition_index=p.partition_index,
                    low_watermark=low,
                    error_code=error,
                )
            )
        topics.append(make(topic_cls, name=t.name, partitions=tuple(partitions)))
    return make(cls, throttle_time=0, topics=tuple(topics))
