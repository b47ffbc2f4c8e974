"""The classic group handlers' translation between kio entities and the coordinator's values,
over a recording stand-in for the coordinator and the real ACL checks with an authorizer of the
test's own: READ on the group or GROUP_AUTHORIZATION_FAILED (30), JoinGroup v0's rebalance
timeout, KIP-394 from v4, LeaveGroup's single member (v0-2) and batch (v3)."""

from __future__ import annotations

import dataclasses
import datetime
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, cast

from node.coordinator.classic_group import (
    JoinedMember,
    JoinGroupRequest,
    JoinGroupResult,
    LeaveMember,
    LeaveMemberResult,
    SyncGroupRequest,
    SyncGroupResult,
)
from node.kafka_door.build import make, nested
from node.kafka_door.context import Connection, RequestContext
from node.kafka_door.frames import request_class
from node.kafka_door.handlers.classic_groups import (
    handle_heartbeat,
    handle_join_group,
    handle_leave_group,
    handle_sync_group,
)
from node.kafka_door.services import DoorServices
from node.security.auth_helper import AuthHelper
from odradek.acl import AclOperation, ResourceType


@dataclass
class _Authorizer:
    checks: list[tuple[str, str, str]] = field(default_factory=list)

    def authorize(
        self, principal: str, host: str, operation: AclOperation, rtype: ResourceType, name: str
    ) -> bool:
        self.checks.append((operation.name, rtype.name, name))
        return name == "allowed"


@dataclass
class _Classic:
    calls: list[Any] = field(default_factory=list)

    def join_group(self, req: JoinGroupRequest) -> Future[JoinGroupResult]:
        self.calls.append(req)
        future: Future[JoinGroupResult] = Future()
        future.set_result(
            JoinGroupResult(
                generation_id=3,
                protocol_type="consumer",
                protocol_name="range",
                leader="m-1",
                member_id="m-1",
                members=(JoinedMember("m-1", None, b"meta"),),
            )
        )
        return future

    def sync_group(self, req: SyncGroupRequest) -> Future[SyncGroupResult]:
        self.calls.append(req)
        future: Future[SyncGroupResult] = Future()
        future.set_result(SyncGroupResult(0, "consumer", "range", b"assigned"))
        return future

    def heartbeat_later(
        self, group_id: str, member_id: str, generation_id: int, instance_id: str | None
    ) -> Future[int]:
        self.calls.append((group_id, member_id, generation_id, instance_id))
        answer: Future[int] = Future()
        answer.set_result(27)
        return answer

    def leave_group(
        self, group_id: str, members: list[LeaveMember]
    ) -> tuple[int, list[LeaveMemberResult]]:
        self.calls.append(members)
        return 0, [LeaveMemberResult(m.member_id, m.instance_id, 25) for m in members]


@dataclass
class _Groups:
    classic: _Classic = field(default_factory=_Classic)


def _services() -> tuple[DoorServices, _Authorizer, _Classic]:
    authorizer = _Authorizer()
    groups = _Groups()
    services = DoorServices(
        node_id=0,
        replicas=cast(Any, None),
        metadata=cast(Any, None),
        auth=AuthHelper(cast(Any, authorizer)),
        producer_ids=None,
        groups=groups,
        admin=None,
    )
    return services, authorizer, groups.classic


def _ctx(key: int, version: int) -> RequestContext:
    return RequestContext(
        Connection("KAFKA", "PLAINTEXT", "127.0.0.9", 5000), key, version, 7, "app"
    )


def _join(version: int, group: str) -> Any:
    cls = request_class(11, version)
    protocol = nested(cls, "JoinGroupRequestProtocol")
    return make(
        cls,
        group_id=group,
        session_timeout=datetime.timedelta(seconds=10),
        rebalance_timeout=datetime.timedelta(seconds=30),
        member_id="",
        group_instance_id=None,
        protocol_type="consumer",
        protocols=(make(protocol, name="range", metadata=b"meta"),),
    )


def test_join_group_needs_read_on_the_group() -> None:
    services, authorizer, classic = _services()
    refused = handle_join_group(services, _ctx(11, 5), _join(5, "denied")).result(0)
    assert int(refused.error_code) == 30 and not classic.calls
    assert authorizer.checks == [("READ", "GROUP", "denied")]
    answer = handle_join_group(services, _ctx(11, 5), _join(5, "allowed")).result(0)
    assert int(answer.error_code) == 0 and answer.generation_id == 3
    assert [(m.member_id, m.metadata) for m in answer.members] == [("m-1", b"meta")]
    (req,) = classic.calls
    assert req.require_known_member_id and req.rebalance_timeout_ms == 30_000
    assert req.client_id == "app" and req.client_host == "/127.0.0.9"
    assert req.protocols == (("range", b"meta"),)


def test_join_group_v0_takes_the_session_timeout_as_rebalance_timeout() -> None:
    services, _, classic = _services()
    handle_join_group(services, _ctx(11, 0), _join(0, "allowed")).result(0)
    (req,) = classic.calls
    assert req.rebalance_timeout_ms == 10_000 and not req.require_known_member_id


def test_sync_heartbeat_and_leave() -> None:
    services, _, classic = _services()
    sync_cls = request_class(14, 3)
    assignment = nested(sync_cls, "SyncGroupRequestAssignment")
    sync = make(
        sync_cls,
        group_id="allowed",
        generation_id=3,
        member_id="m-1",
        group_instance_id=None,
        assignments=(make(assignment, member_id="m-1", assignment=b"a"),),
    )
    answer = handle_sync_group(services, _ctx(14, 3), sync).result(0)
    assert answer.assignment == b"assigned"
    assert classic.calls[-1].assignments == (("m-1", b"a"),)
    denied = handle_sync_group(
        services, _ctx(14, 3), make(sync_cls, **{**_fields(sync), "group_id": "denied"})
    ).result(0)
    assert int(denied.error_code) == 30

    beat_cls = request_class(12, 3)
    beat = make(
        beat_cls, group_id="allowed", generation_id=3, member_id="m-1", group_instance_id="i"
    )
    assert int(handle_heartbeat(services, _ctx(12, 3), beat).result(0).error_code) == 27
    assert classic.calls[-1] == ("allowed", "m-1", 3, "i")

    leave_v0 = make(request_class(13, 0), group_id="allowed", member_id="m-1")
    assert int(handle_leave_group(services, _ctx(13, 0), leave_v0).error_code) == 25
    leave_cls = request_class(13, 3)
    identity = nested(leave_cls, "MemberIdentity")
    batch = make(
        leave_cls,
        group_id="allowed",
        members=(
            make(identity, member_id="m-1", group_instance_id=None),
            make(identity, member_id="", group_instance_id="i-2"),
        ),
    )
    answer = handle_leave_group(services, _ctx(13, 3), batch)
    assert int(answer.error_code) == 0
    assert [(m.member_id, m.group_instance_id, int(m.error_code)) for m in answer.members] == [
        ("m-1", None, 25),
        ("", "i-2", 25),
    ]
    denied_leave = handle_leave_group(
        services, _ctx(13, 3), make(leave_cls, group_id="denied", members=())
    )
    assert int(denied_leave.error_code) == 30


def _fields(entity: Any) -> dict[str, Any]:
    return {f.name: getattr(entity, f.name) for f in dataclasses.fields(entity)}
