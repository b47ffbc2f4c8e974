"""The share group offset APIs (KIP-932) over the Kafka door: DescribeShareGroupOffsets (90)
v0-v1, AlterShareGroupOffsets (91) v0 and DeleteShareGroupOffsets (92) v0, translated to
:class:`~node.apis.share_admin.ShareAdminApis`.

* **DescribeShareGroupOffsets**: each group with its topics (name and id) and partitions'
  start offsets (-1: none); v1 adds the lag (-1: unknown). Topics null: every partition the
  group has share state for.
* **AlterShareGroupOffsets**: a top-level error (the group: refused, unknown, not empty) or one
  per partition; topics named by name, answered with their ids.
* **DeleteShareGroupOffsets**: a top-level error or one per topic.
"""

from __future__ import annotations

from typing import Any

from node.apis.share_admin import SharePartitionOffset
from node.kafka_door import views
from node.kafka_door.build import make, nested, response_class_of
from node.kafka_door.context import RequestContext
from node.kafka_door.services import DoorServices
from node.kafka_door.topic_ids import topic_id_uuid

__all__ = [
    "handle_alter_share_group_offsets",
    "handle_delete_share_group_offsets",
    "handle_describe_share_group_offsets",
]


def _uuid(topic_id: str) -> Any:
    return topic_id_uuid(topic_id) if topic_id else None


def _by_topic(
    partitions: tuple[SharePartitionOffset, ...],
) -> dict[str, list[SharePartitionOffset]]:
    out: dict[str, list[SharePartitionOffset]] = {}
    for p in partitions:
        out.setdefault(p.topic, []).append(p)
    return out


def handle_describe_share_group_offsets(
    services: DoorServices,
    ctx: RequestContext,
    request: views.DescribeShareGroupOffsetsRequestView,
) -> Any:
    apis = services.share_admin_apis
    cls = response_class_of(ctx)
    group_cls = nested(cls, "DescribeShareGroupOffsetsResponseGroup")
    topic_cls = nested(cls, "DescribeShareGroupOffsetsResponseTopic")
    partition_cls = nested(cls, "DescribeShareGroupOffsetsResponsePartition")
    groups = []
    for g in request.groups:
        topics = (
            None
            if g.topics is None
            else [(str(t.topic_name), [int(p) for p in t.partitions]) for t in g.topics]
        )
        answer = apis.describe_share_group_offsets(ctx.caller, str(g.group_id), topics)
        groups.append(
            make(
                group_cls,
                group_id=answer.group_id,
                error_code=answer.error_code,
                error_message=answer.error_message or None,
                topics=tuple(
                    make(
                        topic_cls,
                        topic_name=name,
                        topic_id=_uuid(ps[0].topic_id),
                        partitions=tuple(
                            make(
                                partition_cls,
                                partition_index=p.partition,
                                start_offset=p.start_offset,
                                leader_epoch=p.leader_epoch,
                                lag=p.lag,
                                error_code=p.error_code,
                                error_message=p.error_message or None,
                            )
                            for p in ps
                        ),
                    )
                    for name, ps in _by_topic(answer.partitions).items()
                ),
            )
        )
    return make(cls, throttle_time=0, groups=tuple(groups))


def handle_alter_share_group_offsets(
    services: DoorServices,
    ctx: RequestContext,
    request: views.AlterShareGroupOffsetsRequestView,
) -> Any:
    offsets = [
        (str(t.topic_name), int(p.partition_index), int(p.start_offset))
        for t in request.topics
        for p in t.partitions
    ]
    answer = services.share_admin_apis.alter_share_group_offsets(
        ctx.caller, str(request.group_id), offsets
    )
    cls = response_class_of(ctx)
    topic_cls = nested(cls, "AlterShareGroupOffsetsResponseTopic")
    partition_cls = nested(cls, "AlterShareGroupOffsetsResponsePartition")
    return make(
        cls,
        throttle_time=0,
        error_code=answer.error_code,
        error_message=answer.error_message or None,
        responses=tuple(
            make(
                topic_cls,
                topic_name=name,
                topic_id=_uuid(ps[0].topic_id),
                partitions=tuple(
                    make(
                        partition_cls,
                        partition_index=p.partition,
                        error_code=p.error_code,
                        error_message=p.error_message or None,
                    )
                    for p in ps
                ),
            )
            for name, ps in _by_topic(answer.partitions).items()
        ),
    )


def handle_delete_share_group_offsets(
    services: DoorServices,
    ctx: RequestContext,
    request: views.DeleteShareGroupOffsetsRequestView,
) -> Any:
    answer = services.share_admin_apis.delete_share_group_offsets(
        ctx.caller, str(request.group_id), [str(t.topic_name) for t in request.topics]
    )
    cls = response_class_of(ctx)
    topic_cls = nested(cls, "DeleteShareGroupOffsetsResponseTopic")
    return make(
        cls,
        throttle_time=0,
        error_code=answer.error_code,
        error_message=answer.error_message or None,
        responses=tuple(
            make(
                topic_cls,
                topic_name=t.topic,
                topic_id=_uuid(t.topic_id),
                error_code=t.error_code,
                error_message=t.error_message or None,
            )
            for t in answer.topics
        ),
    )
