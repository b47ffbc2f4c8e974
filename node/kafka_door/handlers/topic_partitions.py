"""DescribeTopicPartitions (75), v0: the topics' partitions page by page (KIP-966), as
:mod:`node.apis.topic_partitions` decides them, each topic with the caller's authorized
operations on it (as Kafka's ``DescribeTopicPartitionsRequestHandler`` always gives them)."""

from __future__ import annotations

from typing import Any

from node.kafka_door import views
from node.kafka_door.build import make, nested, respond, response_class_of
from node.kafka_door.context import RequestContext
from node.kafka_door.handlers.admin_common import authorized_operations
from node.kafka_door.services import DoorServices
from node.kafka_door.topic_ids import ZERO_UUID, topic_id_uuid
from odradek.acl import ResourceType

__all__ = ["handle_describe_topic_partitions"]


def handle_describe_topic_partitions(
    services: DoorServices, ctx: RequestContext, request: views.DescribeTopicPartitionsRequestView
) -> Any:
    cursor = request.cursor
    page = services.api.records.describe_topic_partitions(
        ctx.caller,
        [str(t.name) for t in request.topics],
        None if cursor is None else (str(cursor.topic_name), int(cursor.partition_index)),
        int(request.response_partition_limit),
        ctx.listener,
    )
    cls = response_class_of(ctx)
    topic_cls = nested(cls, "DescribeTopicPartitionsResponseTopic")
    partition_cls = nested(cls, "DescribeTopicPartitionsResponsePartition")
    cursor_cls = nested(cls, "Cursor")
    topics = tuple(
        make(
            topic_cls,
            error_code=t.error_code,
            name=t.name,
            topic_id=topic_id_uuid(t.topic_id) if t.topic_id else ZERO_UUID,
            is_internal=t.is_internal,
            partitions=tuple(
                make(
                    partition_cls,
                    error_code=p.error_code,
                    partition_index=p.partition,
                    leader_id=p.leader,
                    leader_epoch=p.leader_epoch,
                    replica_nodes=p.replicas,
                    isr_nodes=p.isr,
                    offline_replicas=p.offline_replicas,
                )
                for p in t.partitions
            ),
            **(
                {}
                if t.error_code
                else {
                    "topic_authorized_operations": authorized_operations(
                        services, ctx, ResourceType.TOPIC, t.name
                    )
                }
            ),
        )
        for t in page.topics
    )
    next_cursor = (
        None
        if page.next_cursor is None
        else make(cursor_cls, topic_name=page.next_cursor[0], partition_index=page.next_cursor[1])
    )
    return respond(ctx, topics=topics, next_cursor=next_cursor)
