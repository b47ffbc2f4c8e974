"""JoinGroup (11) v0-5, SyncGroup (14) v0-3, Heartbeat (12) v0-3, LeaveGroup (13) v0-3: the
classic consumer group protocol (:mod:`node.coordinator.classic_coordinator`).

A JoinGroup (and a follower's SyncGroup) waits until the rebalance completes, and a Heartbeat
until the group's pending write is replicated: the handler answers with a ``Future`` of its
response, which the door awaits on its loop, so the wait holds no request thread. JoinGroup
v0 has no rebalance timeout: the session timeout stands for it, as Kafka reads it. v4+ members
joining without a member id get MEMBER_ID_REQUIRED (79) and their id (KIP-394); LeaveGroup v3
leaves a batch of members (KIP-345). Every request needs READ on the group, else
GROUP_AUTHORIZATION_FAILED (30), as Kafka's ``KafkaApis`` checks.
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
from node.kafka_door.build import make, nested
from node.kafka_door.context import RequestContext
from node.kafka_door.frames import response_class
from node.kafka_door.services import DoorServices

__all__ = [
    "handle_heartbeat",
    "then",
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


def then(future: Future[_T], answer: Callable[[_T], Any]) -> Future[Any]:
    """A future of ``answer(result)`` once ``future`` is done."""
    out: Future[Any] = Future()

    def done(f: Future[_T]) -> None:
        try:
            out.set_result(answer(f.result()))
        except Exception as e:  # surfaces in the door, which logs it and closes
            out.set_exception(e)

    future.add_done_callback(done)
    return out


def _refused(services: DoorServices, ctx: RequestContext, group_id: str) -> int:
    if services.auth is None:
        return 0
    refusals = services.auth.classic_group(ctx.caller, group_id)
    return refusals[0].error_code if refusals else 0


def handle_join_group(services: DoorServices, ctx: RequestContext, request: Any) -> Any:
    cls = response_class(JOIN_GROUP, ctx.api_version)
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
    denied = _refused(services, ctx, group_id)
    if denied:
        return answer(JoinGroupResult(error_code=denied, member_id=request.member_id))
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
    return then(services.groups.classic.join_group(req), answer)


def handle_sync_group(services: DoorServices, ctx: RequestContext, request: Any) -> Any:
    cls = response_class(SYNC_GROUP, ctx.api_version)

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
    denied = _refused(services, ctx, group_id)
    if denied:
        return answer(SyncGroupResult(denied))
    req = SyncGroupRequest(
        group_id=group_id,
        member_id=str(request.member_id),
        generation_id=int(request.generation_id),
        instance_id=getattr(request, "group_instance_id", None),
        protocol_type=getattr(request, "protocol_type", None),
        protocol_name=getattr(request, "protocol_name", None),
        assignments=tuple((str(a.member_id), bytes(a.assignment)) for a in request.assignments),
    )
    return then(services.groups.classic.sync_group(req), answer)


def handle_heartbeat(services: DoorServices, ctx: RequestContext, request: Any) -> Any:
    group_id = str(request.group_id)
    cls = response_class(HEARTBEAT, ctx.api_version)
    refused = _refused(services, ctx, group_id)
    if refused:
        return make(cls, throttle_time=0, error_code=refused)
    # processed at once; the answer waits (on the loop) for the group's pending write
    code = services.groups.classic.heartbeat_later(
        group_id,
        str(request.member_id),
        int(request.generation_id),
        getattr(request, "group_instance_id", None),
    )
    return then(code, lambda c: make(cls, throttle_time=0, error_code=c))


def handle_leave_group(services: DoorServices, ctx: RequestContext, request: Any) -> Any:
    cls = response_class(LEAVE_GROUP, ctx.api_version)
    group_id = str(request.group_id)
    batch = ctx.api_version >= 3
    if batch:
        members = [LeaveMember(str(m.member_id), m.group_instance_id) for m in request.members]
    else:
        members = [LeaveMember(str(request.member_id))]
    denied = _refused(services, ctx, group_id)
    if denied:
        return make(cls, throttle_time=0, error_code=denied, members=())
    code, results = services.groups.classic.leave_group(group_id, members)
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
