"""JoinGroup (11) v0-5, SyncGroup (14) v0-3, Heartbeat (12) v0-3, LeaveGroup (13) v0-3: the
classic consumer group protocol (:mod:`node.coordinator.classic_coordinator`).

A JoinGroup (and a follower's SyncGroup) waits until the rebalance completes, and a Heartbeat
until the group's pending write is replicated: the handler answers with a ``Future`` of its
response, which the door awaits on its loop, so the wait holds no request thread. JoinGroup
v0 has no rebalance timeout: the session timeout stands for it, as Kafka reads it. v4+ members
joining without a member id get MEMBER_ID_REQUIRED (79) and their id (KIP-394); LeaveGroup v3
leaves a batch of members (KIP-345). Every request needs READ on the group, else
GROUP_AUTHORIZATION_FAILED (30): the policy is :class:`~node.apis.groups.GroupApis`'.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

from node.coordinator.classic_group import (
    JoinGroupRequest,
    JoinGroupResult,
    LeaveMember,
    SyncGroupRequest,
    SyncGroupResult,
)
from node.kafka_door import views
from node.kafka_door.build import make, nested, respond, response_class_of
from node.kafka_door.context import RequestContext
from node.kafka_door.services import DoorServices

__all__ = [
    "handle_heartbeat",
    "handle_join_group",
    "handle_leave_group",
    "handle_sync_group",
]

JOIN_GROUP = 11
HEARTBEAT = 12
LEAVE_GROUP = 13
SYNC_GROUP = 14

_T = TypeVar("_T")


def _ms(value: Any) -> int:
    return int(value.total_seconds() * 1000)


def _then(future: Future[_T], answer: Callable[[_T], Any]) -> Future[Any]:
    """A future of ``answer(result)`` once ``future`` is done."""
    out: Future[Any] = Future()

    def done(f: Future[_T]) -> None:
        try:
            out.set_result(answer(f.result()))
        except Exception as e:  # surfaces in the door, which logs it and closes
            out.set_exception(e)

    future.add_done_callback(done)
    return out


def handle_join_group(
    services: DoorServices, ctx: RequestContext, request: views.JoinGroupRequestView
) -> Any:
    cls = response_class_of(ctx)
    member_cls = nested(cls, "JoinGroupResponseMember")

    def answer(r: JoinGroupResult) -> Any:
        return make(
            cls,
            throttle_time=0,
            error_code=r.error_code,
            generation_id=r.generation_id,
            protocol_type=r.protocol_type,
            protocol_name=r.protocol_name or "",
            leader=r.leader,
            skip_assignment=r.skip_assignment,
            member_id=r.member_id,
            members=tuple(
                make(
                    member_cls,
                    member_id=m.member_id,
                    group_instance_id=m.instance_id,
                    metadata=m.metadata,
                )
                for m in r.members
            ),
        )

    group_id = str(request.group_id)
    session = _ms(request.session_timeout)
    rebalance = getattr(request, "rebalance_timeout", None)
    req = JoinGroupRequest(
        group_id=group_id,
        member_id=str(request.member_id),
        protocol_type=str(request.protocol_type),
        protocols=tuple((str(p.name), bytes(p.metadata)) for p in request.protocols),
        session_timeout_ms=session,
        rebalance_timeout_ms=session if rebalance is None else _ms(rebalance),
        client_id=ctx.client_id or "",
        client_host="/" + ctx.connection.peer_host,
        instance_id=getattr(request, "group_instance_id", None),
        require_known_member_id=ctx.api_version >= 4,
    )
    return _then(services.group_apis.join_group(ctx.caller, req), answer)


def handle_sync_group(
    services: DoorServices, ctx: RequestContext, request: views.SyncGroupRequestView
) -> Any:
    cls = response_class_of(ctx)

    def answer(r: SyncGroupResult) -> Any:
        return make(
            cls,
            throttle_time=0,
            error_code=r.error_code,
            protocol_type=r.protocol_type,
            protocol_name=r.protocol_name,
            assignment=r.assignment,
        )

    group_id = str(request.group_id)
    req = SyncGroupRequest(
        group_id=group_id,
        member_id=str(request.member_id),
        generation_id=int(request.generation_id),
        instance_id=getattr(request, "group_instance_id", None),
        protocol_type=getattr(request, "protocol_type", None),
        protocol_name=getattr(request, "protocol_name", None),
        assignments=tuple((str(a.member_id), bytes(a.assignment)) for a in request.assignments),
    )
    return _then(services.group_apis.sync_group(ctx.caller, req), answer)


def handle_heartbeat(
    services: DoorServices, ctx: RequestContext, request: views.HeartbeatRequestView
) -> Any:
    # processed at once; the answer waits (on the loop) for the group's pending write
    code = services.group_apis.heartbeat_later(
        ctx.caller,
        str(request.group_id),
        str(request.member_id),
        int(request.generation_id),
        getattr(request, "group_instance_id", None),
    )
    return _then(code, lambda c: respond(ctx, error_code=c))


def handle_leave_group(
    services: DoorServices, ctx: RequestContext, request: views.LeaveGroupRequestView
) -> Any:
    cls = response_class_of(ctx)
    group_id = str(request.group_id)
    batch = ctx.api_version >= 3
    versioned: Any = request  # v3+ leaves a batch of members, v0-v2 one (not in every view)
    if batch:
        members = [LeaveMember(str(m.member_id), m.group_instance_id) for m in versioned.members]
    else:
        members = [LeaveMember(str(versioned.member_id))]
    code, results = services.group_apis.leave_group(ctx.caller, group_id, members)
    if not batch:
        # v0-2: one member, its error is the request's
        return make(
            cls, throttle_time=0, error_code=code or (results[0].error_code if results else 0)
        )
    member_cls = nested(cls, "MemberResponse")
    return make(
        cls,
        throttle_time=0,
        error_code=code,
        members=tuple(
            make(
                member_cls,
                member_id=r.member_id,
                group_instance_id=r.instance_id,
                error_code=r.error_code,
            )
            for r in results
        ),
    )
