"""Consumer groups over the Kafka door: ConsumerGroupHeartbeat (68) v0-v1 and
ConsumerGroupDescribe (69) v0-v1 (KIP-848), ListGroups (16) v0-v5, DescribeGroups (15) v0-v4 and
DeleteGroups (42) v0-v1, translated to the group coordinator
(:class:`node.coordinator.group_coordinator.GroupCoordinator`); the offsets APIs are
:mod:`node.kafka_door.handlers.group_offsets`. As Kafka's ``KafkaApis``:

* **ConsumerGroupHeartbeat**: READ on the group (else GROUP_AUTHORIZATION_FAILED, 30); the
  member's owned partitions and its assignment name topics by id (16 bytes on the wire,
  odradek's base64 text inside: :mod:`node.kafka_door.topic_ids`); ClientId is the request
  header's, ClientHost ``/`` and the peer's address. v1's member id is the client's (KIP-1082).
* **ConsumerGroupDescribe**: DESCRIBE on each group; a group the coordinator holds only
  committed offsets of (no KIP-848 group record: epoch 0, no member) is not a consumer group
  for Kafka (it is an empty classic group): GROUP_ID_NOT_FOUND (69), so librdkafka's
  ``describe_consumer_groups`` asks DescribeGroups for it. v1 gives each member's
  ``MemberType`` (KIP-1099): 1 a KIP-848 member, 0 a classic member of the group.
* **DescribeGroups** is the classic protocol's: a KIP-848 group is described as Kafka 4 does,
  ``Dead`` without members ("not a classic group"; clients use ConsumerGroupDescribe), an
  unknown group ``Dead``, a group of committed offsets only ``Empty`` with protocol type ``""``.
* **ListGroups**: the groups of the coordinator shards this node holds (a client asks every
  broker); v4+ filter by state (any case), v5+ by type; without DESCRIBE on the cluster only
  the groups the caller may DESCRIBE are listed.
* **DeleteGroups**: DELETE on each group; NON_EMPTY_GROUP (68) for a group with members,
  GROUP_ID_NOT_FOUND (69) for an unknown one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import timedelta
from typing import Any

from kio.static.primitive import i8

from node.apis.groups import then
from node.coordinator.group_requests import (
    DescribedGroup,
    HeartbeatRequest,
    HeartbeatResponse,
    TopicPartitions,
)
from node.kafka_door import views
from node.kafka_door.build import make, nested, response_class_of
from node.kafka_door.context import RequestContext
from node.kafka_door.handlers.admin_common import NO_OPERATIONS, authorized_operations
from node.kafka_door.services import DoorServices
from node.kafka_door.topic_ids import topic_id_text, topic_id_uuid
from node.security.auth_helper import Refusal
from odradek.acl import ResourceType

__all__ = [
    "handle_consumer_group_describe",
    "handle_consumer_group_heartbeat",
    "handle_delete_groups",
    "handle_describe_groups",
    "handle_list_groups",
]

DESCRIBE_GROUPS = 15
LIST_GROUPS = 16
DELETE_GROUPS = 42
CONSUMER_GROUP_HEARTBEAT = 68
CONSUMER_GROUP_DESCRIBE = 69
GROUP_AUTHORIZATION_FAILED = 30
GROUP_ID_NOT_FOUND = 69


def _ms(value: timedelta | int) -> int:
    if isinstance(value, timedelta):
        return int(value / timedelta(milliseconds=1))
    return int(value)


def _refused(refusals: Iterable[Refusal]) -> dict[str, Refusal]:
    return {r.name: r for r in refusals}


# -- ConsumerGroupHeartbeat (KIP-848) ----------------------------------------------------------


def handle_consumer_group_heartbeat(
    services: DoorServices, ctx: RequestContext, request: views.ConsumerGroupHeartbeatRequestView
) -> Any:
    group_id = str(request.group_id)
    owned = None
    if request.topic_partitions is not None:
        owned = {
            topic_id_text(tp.topic_id): frozenset(int(p) for p in tp.partitions)
            for tp in request.topic_partitions
            if tp.partitions
        }
    names = request.subscribed_topic_names
    heartbeat = HeartbeatRequest(
        group_id=group_id,
        member_id=str(request.member_id or ""),
        member_epoch=int(request.member_epoch),
        instance_id=request.instance_id,
        rack_id=request.rack_id,
        rebalance_timeout_ms=_ms(request.rebalance_timeout),
        subscribed_topic_names=None if names is None else tuple(str(n) for n in names),
        subscribed_topic_regex=getattr(request, "subscribed_topic_regex", None),
        server_assignor=request.server_assignor,
        owned=owned,
        client_id=ctx.client_id or "",
        client_host="/" + ctx.connection.peer_host,
    )
    # processed at once; the answer waits (on the loop, no request thread held) for the
    # group's pending write
    return then(
        services.group_apis.consumer_group_heartbeat_later(ctx.caller, heartbeat),
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


# -- ConsumerGroupDescribe (KIP-848) -----------------------------------------------------------


def _is_offsets_only(g: DescribedGroup) -> bool:
    """A group the coordinator knows by its committed offsets alone (no group record)."""
    return g.error_code == 0 and g.group_epoch == 0 and not g.members


def handle_consumer_group_describe(
    services: DoorServices, ctx: RequestContext, request: views.ConsumerGroupDescribeRequestView
) -> Any:
    ids = [str(g) for g in request.group_ids]
    described = services.group_apis.consumer_group_describe(ctx.caller, ids)
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

    groups = []
    for g in described:
        gid = g.group_id
        groups.append(
            make(
                group_cls,
                group_id=gid,
                error_code=g.error_code,
                error_message=g.error_message or None,
                group_state=g.group_state,
                group_epoch=g.group_epoch,
                assignment_epoch=g.assignment_epoch,
                assignor_name=g.assignor_name,
                members=tuple(
                    make(
                        member_cls,
                        member_id=m.member_id,
                        instance_id=m.instance_id,
                        rack_id=m.rack_id,
                        member_epoch=m.member_epoch,
                        client_id=m.client_id,
                        client_host=m.client_host,
                        subscribed_topic_names=m.subscribed_topic_names,
                        subscribed_topic_regex=m.subscribed_topic_regex,
                        assignment=assignment(m.assignment),
                        target_assignment=assignment(m.target_assignment),
                        member_type=i8(m.member_type),  # v1 (KIP-1099)
                    )
                    for m in g.members
                ),
                authorized_operations=operations(gid, g.error_code),
            )
        )
    return make(cls, throttle_time=0, groups=tuple(groups))


def _group_operations(
    services: DoorServices, ctx: RequestContext, request: Any
) -> Callable[[str, int], int]:
    """A described group's ``authorized_operations``: its bit field when the request asks for
    it (DescribeGroups v3+, ConsumerGroupDescribe) and the group is answered without an error,
    as Kafka's handlers set it; else ``Int32.MinValue``."""
    asked = bool(getattr(request, "include_authorized_operations", False))

    def operations(group_id: str, error_code: int) -> int:
        if not asked or error_code != 0:
            return NO_OPERATIONS
        return authorized_operations(services, ctx, ResourceType.GROUP, group_id)

    return operations


# -- DescribeGroups (the classic protocol's) ---------------------------------------------------


def handle_describe_groups(
    services: DoorServices, ctx: RequestContext, request: views.DescribeGroupsRequestView
) -> Any:
    ids = [str(g) for g in request.groups]
    operations = _group_operations(services, ctx, request)
    cls = response_class_of(ctx)
    group_cls = nested(cls, "DescribedGroup")
    member_cls = nested(cls, "DescribedGroupMember")
    groups = []
    for g in services.group_apis.describe_groups(ctx.caller, ids):
        gid = g.group_id
        error, state, protocol_type, protocol, members = 0, "Dead", "", "", ()
        if g.error_code == GROUP_AUTHORIZATION_FAILED:
            error, state = g.error_code, ""
        else:
            if g.error_code == 0 and g.group_type == "classic":
                state, protocol_type, protocol = g.group_state, g.protocol_type, g.protocol
                members = tuple(
                    make(
                        member_cls,
                        member_id=m.member_id,
                        group_instance_id=m.instance_id,
                        client_id=m.client_id,
                        client_host=m.client_host,
                        member_metadata=m.member_metadata,
                        member_assignment=m.member_assignment,
                    )
                    for m in g.members
                )
            elif _is_offsets_only(g):
                state = "Empty"
            elif g.error_code not in (0, GROUP_ID_NOT_FOUND):
                error, state = g.error_code, ""
            # otherwise a KIP-848 group ("not a classic group") or an unknown one: Dead
        groups.append(
            make(
                group_cls,
                error_code=error,
                group_id=gid,
                group_state=state,
                protocol_type=protocol_type,
                protocol_data=protocol,
                members=members,
                authorized_operations=operations(gid, error),
            )
        )
    return make(cls, throttle_time=0, groups=tuple(groups))


# -- ListGroups ------------------------------------------------------------------------------


def handle_list_groups(
    services: DoorServices, ctx: RequestContext, request: views.ListGroupsRequestView
) -> Any:
    states = [str(s) for s in getattr(request, "states_filter", ()) or ()]
    types = {str(t).lower() for t in getattr(request, "types_filter", ()) or ()}
    result = services.group_apis.list_groups(ctx.caller, states, sorted(types))
    cls = response_class_of(ctx)
    group_cls = nested(cls, "ListedGroup")
    return make(
        cls,
        throttle_time=0,
        error_code=result.error_code,
        groups=tuple(
            make(
                group_cls,
                group_id=g.group_id,
                protocol_type=g.protocol_type,
                group_state=g.group_state,
                group_type=g.group_type,
            )
            for g in result.groups
        ),
    )


# -- DeleteGroups ----------------------------------------------------------------------------


def handle_delete_groups(
    services: DoorServices, ctx: RequestContext, request: views.DeleteGroupsRequestView
) -> Any:
    ids = list(dict.fromkeys(str(g) for g in request.groups_names))
    results = {r.group_id: r.error_code for r in services.group_apis.delete_groups(ctx.caller, ids)}
    cls = response_class_of(ctx)
    result_cls = nested(cls, "DeletableGroupResult")
    return make(
        cls,
        throttle_time=0,
        results=tuple(make(result_cls, group_id=g, error_code=results[g]) for g in ids),
    )
