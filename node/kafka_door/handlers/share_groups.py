"""Share groups (KIP-932) over the Kafka door: ShareGroupHeartbeat (76) v1 and
ShareGroupDescribe (77) v1, translated to :class:`~node.apis.share_groups.ShareGroupApis`.
ListGroups' ``share`` type, DescribeGroups and DeleteGroups of share groups are the group
handlers' (:mod:`node.kafka_door.handlers.groups`).

* **ShareGroupHeartbeat**: the member id is the client's (v1); ClientId is the request
  header's, ClientHost ``/`` and the peer's address; the assignment names topics by id (16
  bytes on the wire, odradek's base64 text inside: :mod:`node.kafka_door.topic_ids`), sent
  only when it is news to the member.
* **ShareGroupDescribe**: each group with its state (Empty, Stable), epochs, assignor
  ``simple`` and members (rack, client id and host, subscribed topics, assignment by topic id
  and name); ``authorized_operations`` when asked.
"""

from __future__ import annotations

from typing import Any

from node.apis.groups import then
from node.coordinator.group_requests import HeartbeatResponse, TopicPartitions
from node.kafka_door import views
from node.kafka_door.build import make, nested, response_class_of
from node.kafka_door.context import RequestContext
from node.kafka_door.handlers.groups import _group_operations
from node.kafka_door.services import DoorServices
from node.kafka_door.topic_ids import topic_id_uuid
from node.share_group.share_group import ShareHeartbeatRequest

__all__ = ["handle_share_group_describe", "handle_share_group_heartbeat"]

SHARE_GROUP_HEARTBEAT = 76
SHARE_GROUP_DESCRIBE = 77


def handle_share_group_heartbeat(
    services: DoorServices, ctx: RequestContext, request: views.ShareGroupHeartbeatRequestView
) -> Any:
    names = request.subscribed_topic_names
    heartbeat = ShareHeartbeatRequest(
        group_id=str(request.group_id),
        member_id=str(request.member_id or ""),
        member_epoch=int(request.member_epoch),
        rack_id=request.rack_id,
        subscribed_topic_names=None if names is None else tuple(str(n) for n in names),
        client_id=ctx.client_id or "",
        client_host="/" + ctx.connection.peer_host,
    )
    # processed at once; the answer waits (no request thread held) for the group's write
    return then(
        services.share_group_apis.share_group_heartbeat_later(ctx.caller, heartbeat),
        lambda answer: _heartbeat_answer(ctx, answer),
    )


def _heartbeat_answer(ctx: RequestContext, r: HeartbeatResponse) -> Any:
    cls = response_class_of(ctx)
    assignment = None
    if r.assignment is not None:
        tp_cls = nested(cls, "TopicPartitions")
        assignment = make(
            nested(cls, "Assignment"),
            topic_partitions=tuple(
                make(tp_cls, topic_id=topic_id_uuid(t.topic_id), partitions=t.partitions)
                for t in r.assignment
            ),
        )
    return make(
        cls,
        throttle_time=0,
        error_code=r.error_code,
        error_message=r.error_message or None,
        member_id=r.member_id or None,
        member_epoch=r.member_epoch,
        heartbeat_interval=r.heartbeat_interval_ms,
        assignment=assignment,
    )


def handle_share_group_describe(
    services: DoorServices, ctx: RequestContext, request: views.ShareGroupDescribeRequestView
) -> Any:
    ids = [str(g) for g in request.group_ids]
    described = services.share_group_apis.share_group_describe(ctx.caller, ids)
    operations = _group_operations(services, ctx, request)
    cls = response_class_of(ctx)
    group_cls = nested(cls, "DescribedGroup")
    member_cls = nested(cls, "Member")
    assignment_cls = nested(cls, "Assignment")
    tp_cls = nested(cls, "TopicPartitions")

    def assignment(tps: tuple[TopicPartitions, ...]) -> Any:
        return make(
            assignment_cls,
            topic_partitions=tuple(
                make(
                    tp_cls,
                    topic_id=topic_id_uuid(t.topic_id),
                    topic_name=t.topic_name,
                    partitions=t.partitions,
                )
                for t in tps
            ),
        )

    groups = tuple(
        make(
            group_cls,
            error_code=g.error_code,
            error_message=g.error_message or None,
            group_id=g.group_id,
            group_state=g.group_state,
            group_epoch=g.group_epoch,
            assignment_epoch=g.assignment_epoch,
            assignor_name=g.assignor_name,
            members=tuple(
                make(
                    member_cls,
                    member_id=m.member_id,
                    rack_id=m.rack_id,
                    member_epoch=m.member_epoch,
                    client_id=m.client_id,
                    client_host=m.client_host,
                    subscribed_topic_names=m.subscribed_topic_names,
                    assignment=assignment(m.assignment),
                )
                for m in g.members
            ),
            authorized_operations=operations(g.group_id, g.error_code),
        )
        for g in described
    )
    return make(cls, throttle_time=0, groups=groups)
