"""The consumer group RPCs of the Broker service, served by
:mod:`node.coordinator.group_coordinator`.

:class:`GroupRpcs` is a mixin of the node's Broker servicer
(:class:`node.grpc_door.service.BrokerServicer`) holding the group RPCs (those at the end of
the Broker service in the proto). Thin: each handler translates the request to the
coordinator's values (:mod:`node.grpc_door.group_translate`) and hands them to it; it answers
with Kafka error codes, translated back; a servicer without a coordinator answers gRPC
UNIMPLEMENTED. Handlers run on the server's worker
threads and may block while a write waits for the high watermark.
"""

from __future__ import annotations

from collections.abc import Callable

import grpc

from node.coordinator.group_coordinator import GroupCoordinator
from node.coordinator.group_requests import ListGroupsResult
from node.grpc_door import group_translate as wire
from node.grpc_door.authentication import current_request
from node.grpc_door.request_checks import abort_refused, current_caller
from node.security.auth_helper import AuthHelper, Caller, Refusal
from odradek.v1 import odradek_pb2 as pb

__all__ = ["GroupRpcs"]


def _client_host(context: grpc.ServicerContext) -> str:
    """Kafka's ClientHost: ``/`` and the peer's address (``ipv4:127.0.0.1:5000`` →
    ``/127.0.0.1``): the client's, also behind the node's own TLS (ssl.client.auth=requested)."""
    request = current_request()
    peer = request.client_address if request is not None else (context.peer() or "")
    address = peer.split(":", 1)[1] if ":" in peer else peer
    host = address.rsplit(":", 1)[0] if ":" in address else address
    return "/" + host.strip("[]")


class GroupRpcs:
    """FindCoordinator, ConsumerGroupHeartbeat, OffsetCommit, OffsetFetch, ListGroups,
    ConsumerGroupDescribe, DeleteGroups and OffsetDelete, handed to ``self._groups``."""

    _groups: GroupCoordinator | None = None
    _auth: AuthHelper | None = None
    _listener_name: str | None = None

    def _check(
        self, context: grpc.ServicerContext, refusals: Callable[[AuthHelper, Caller], list[Refusal]]
    ) -> None:
        """Aborts the call with GROUP_AUTHORIZATION_FAILED if the ACL check refuses a group."""
        if self._auth is not None:
            abort_refused(context, refusals(self._auth, current_caller()))

    def _coordinator(self, context: grpc.ServicerContext) -> GroupCoordinator:
        if self._groups is None:
            context.abort(grpc.StatusCode.UNIMPLEMENTED, "this server has no group coordinator")
            raise AssertionError("abort raises")  # pragma: no cover
        return self._groups

    def FindCoordinator(  # noqa: N802  (gRPC method names)
        self, request: pb.FindCoordinatorRequest, context: grpc.ServicerContext
    ) -> pb.FindCoordinatorResponse:
        ids = list(request.group_ids)
        self._check(context, lambda auth, caller: auth.find_coordinator(caller, ids))
        # the coordinator's endpoint on the listener this request came in on (Kafka's rule)
        coordinators = self._coordinator(context).find_coordinator(ids, self._listener_name)
        return wire.find_coordinator_to_wire(coordinators)

    def ConsumerGroupHeartbeat(  # noqa: N802
        self, request: pb.ConsumerGroupHeartbeatRequest, context: grpc.ServicerContext
    ) -> pb.ConsumerGroupHeartbeatResponse:
        group_id = request.group_id
        self._check(context, lambda auth, caller: auth.consumer_group_heartbeat(caller, group_id))
        heartbeat = wire.heartbeat_from_wire(request, _client_host(context))
        return wire.heartbeat_to_wire(
            self._coordinator(context).consumer_group_heartbeat(heartbeat)
        )

    def OffsetCommit(  # noqa: N802
        self, request: pb.OffsetCommitRequest, context: grpc.ServicerContext
    ) -> pb.OffsetCommitResponse:
        group_id = request.group_id
        self._check(context, lambda auth, caller: auth.offset_commit(caller, group_id))
        result = self._coordinator(context).offset_commit(
            request.group_id,
            request.member_id,
            request.member_epoch,
            wire.offset_commit_from_wire(request),
        )
        return wire.offset_commit_to_wire(result)

    def OffsetFetch(  # noqa: N802
        self, request: pb.OffsetFetchRequest, context: grpc.ServicerContext
    ) -> pb.OffsetFetchResponse:
        group_id = request.group_id
        self._check(context, lambda auth, caller: auth.offset_fetch(caller, group_id))
        wanted = (
            None
            if request.all_topics
            else [(t.name, p) for t in request.topics for p in t.partitions]
        )
        result = self._coordinator(context).offset_fetch(
            request.group_id, request.member_id, request.member_epoch, wanted
        )
        return wire.offset_fetch_to_wire(result)

    def ListGroups(  # noqa: N802
        self, request: pb.ListGroupsRequest, context: grpc.ServicerContext
    ) -> pb.ListGroupsResponse:
        result = self._coordinator(context).list_groups(list(request.states_filter))
        if self._auth is not None:
            visible = self._auth.list_groups(current_caller(), result.groups)
            result = ListGroupsResult(result.error_code, visible)
        return wire.list_groups_to_wire(result)

    def ConsumerGroupDescribe(  # noqa: N802
        self, request: pb.ConsumerGroupDescribeRequest, context: grpc.ServicerContext
    ) -> pb.ConsumerGroupDescribeResponse:
        ids = list(request.group_ids)
        self._check(context, lambda auth, caller: auth.describe_groups(caller, ids))
        groups = self._coordinator(context).describe_groups(ids)
        return wire.described_groups_to_wire(groups)

    def DeleteGroups(  # noqa: N802
        self, request: pb.DeleteGroupsRequest, context: grpc.ServicerContext
    ) -> pb.DeleteGroupsResponse:
        ids = list(request.group_ids)
        self._check(context, lambda auth, caller: auth.delete_groups(caller, ids))
        results = self._coordinator(context).delete_groups(ids)
        return wire.deleted_groups_to_wire(results)

    def OffsetDelete(  # noqa: N802
        self, request: pb.OffsetDeleteRequest, context: grpc.ServicerContext
    ) -> pb.OffsetDeleteResponse:
        group_id = request.group_id
        self._check(context, lambda auth, caller: auth.offset_delete(caller, group_id))
        partitions = [(t.name, p) for t in request.topics for p in t.partitions]
        result = self._coordinator(context).offset_delete(request.group_id, partitions)
        return wire.offset_delete_to_wire(result)
