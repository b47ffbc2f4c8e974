"""ListOffsets (2) v1-v10, OffsetForLeaderEpoch (23) v2-v3 and DeleteRecords (21) v0-v1.

ListOffsets: the special timestamps are Kafka's: -2 earliest, -1 latest (the high watermark for
a consumer), -3 the record with the largest timestamp (KIP-734, from v7: refused below it), -4
the earliest local offset (KIP-405, from v8: the log start offset, odradek having no tiered
storage), -5 the latest tiered offset (KIP-1005, from v9: none, -1). A special timestamp below
its version, or any other negative one, answers UNSUPPORTED_VERSION (35) for its partition, as
Kafka's ReplicaManager does; an isolation level other than 0 and 1 closes the connection, as
Kafka's parser refuses it. v6+ are flexible; v10's ``TimeoutMs`` (KIP-1075) bounds a lookup
in remote storage, which odradek never makes: every answer is immediate. Each API's policy
(DESCRIBE, DESCRIBE, DELETE on each topic: a refused partition answers
TOPIC_AUTHORIZATION_FAILED, 29) is :class:`~node.apis.records.RecordApis`'.
"""

from __future__ import annotations

from typing import Any

from node.core.requests import (
    READ_COMMITTED,
    READ_UNCOMMITTED,
    DeleteRecordsPartition,
    ListOffsetsPartition,
    ListOffsetsResult,
    OffsetForLeaderEpochPartition,
)
from node.kafka_door import views
from node.kafka_door.build import make, nested, response_class_of
from node.kafka_door.context import RequestContext
from node.kafka_door.server import CLOSE_CONNECTION
from node.kafka_door.services import DoorServices

__all__ = ["handle_delete_records", "handle_list_offsets", "handle_offset_for_leader_epoch"]

UNSUPPORTED_VERSION = 35
_TIMESTAMP_SINCE = {-2: 1, -1: 1, -3: 7, -4: 8, -5: 9}
"""Kafka's special ListOffsets timestamps and the version each needs
(``ReplicaManager.timestampMinSupportedVersion``)."""


def handle_list_offsets(
    services: DoorServices, ctx: RequestContext, request: views.ListOffsetsRequestView
) -> Any:
    version = ctx.api_version
    isolation_level = int(getattr(request, "isolation_level", READ_UNCOMMITTED))
    if isolation_level not in (READ_UNCOMMITTED, READ_COMMITTED):
        # Kafka's IsolationLevel.forId refuses it while parsing: the connection is closed
        return CLOSE_CONNECTION
    wanted: list[ListOffsetsPartition] = []
    results: list[ListOffsetsResult] = []
    for t in request.topics:
        for p in t.partitions:
            timestamp = int(p.timestamp)
            if timestamp < 0 and version < _TIMESTAMP_SINCE.get(timestamp, 1 << 15):
                results.append(
                    ListOffsetsResult(t.name, int(p.partition_index), UNSUPPORTED_VERSION)
                )
                continue
            wanted.append(
                ListOffsetsPartition(
                    topic=t.name,
                    partition=int(p.partition_index),
                    timestamp=timestamp,
                    current_leader_epoch=int(getattr(p, "current_leader_epoch", -1)),
                )
            )
    results += services.api.records.list_offsets(
        ctx.caller,
        wanted,
        replica_id=int(request.replica_id),
        isolation_level=isolation_level,
    )
    by_key = {(r.topic, r.partition): r for r in results}
    cls = response_class_of(ctx)
    topic_cls = nested(cls, "ListOffsetsTopicResponse")
    partition_cls = nested(cls, "ListOffsetsPartitionResponse")
    topics = []
    for t in request.topics:
        partitions = []
        for p in t.partitions:
            r = by_key[(t.name, int(p.partition_index))]
            partitions.append(
                make(
                    partition_cls,
                    partition_index=p.partition_index,
                    error_code=r.error_code,
                    timestamp=r.timestamp,
                    offset=r.offset,
                    leader_epoch=r.leader_epoch,
                )
            )
        topics.append(make(topic_cls, name=t.name, partitions=tuple(partitions)))
    return make(cls, throttle_time=0, topics=tuple(topics))


def handle_offset_for_leader_epoch(
    services: DoorServices, ctx: RequestContext, request: views.OffsetForLeaderEpochRequestView
) -> Any:
    wanted = [
        OffsetForLeaderEpochPartition(
            topic=t.topic,
            partition=int(p.partition),
            leader_epoch=int(p.leader_epoch),
            current_leader_epoch=int(getattr(p, "current_leader_epoch", -1)),
        )
        for t in request.topics
        for p in t.partitions
    ]
    results = services.api.records.offset_for_leader_epoch(ctx.caller, wanted)
    by_key = {(r.topic, r.partition): r for r in results}
    cls = response_class_of(ctx)
    topic_cls = nested(cls, "OffsetForLeaderTopicResult")
    partition_cls = nested(cls, "EpochEndOffset")
    topics = []
    for t in request.topics:
        partitions = []
        for p in t.partitions:
            r = by_key[(t.topic, int(p.partition))]
            partitions.append(
                make(
                    partition_cls,
                    partition=p.partition,
                    error_code=r.error_code,
                    leader_epoch=r.leader_epoch,
                    end_offset=r.end_offset,
                )
            )
        topics.append(make(topic_cls, topic=t.topic, partitions=tuple(partitions)))
    return make(cls, throttle_time=0, topics=tuple(topics))


def handle_delete_records(
    services: DoorServices, ctx: RequestContext, request: views.DeleteRecordsRequestView
) -> Any:
    wanted = [
        DeleteRecordsPartition(topic=t.name, partition=int(p.partition_index), offset=int(p.offset))
        for t in request.topics
        for p in t.partitions
    ]
    results = services.api.records.delete_records(
        ctx.caller, wanted, timeout_ms=int(request.timeout.total_seconds() * 1000)
    )
    by_key = {(r.topic, r.partition): r for r in results}
    cls = response_class_of(ctx)
    topic_cls = nested(cls, "DeleteRecordsTopicResult")
    partition_cls = nested(cls, "DeleteRecordsPartitionResult")
    topics = []
    for t in request.topics:
        partitions = []
        for p in t.partitions:
            r = by_key[(t.name, int(p.partition_index))]
            partitions.append(
                make(
                    partition_cls,
                    partition_index=p.partition_index,
                    low_watermark=r.low_watermark,
                    error_code=r.error_code,
                )
            )
        topics.append(make(topic_cls, name=t.name, partitions=tuple(partitions)))
    return make(cls, throttle_time=0, topics=tuple(topics))
