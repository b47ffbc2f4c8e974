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

import grpc

from node.apis.groups import GroupApis
from node.grpc_door import group_translate as wire
from node.grpc_door.authentication import current_request
from node.grpc_door.request_checks import GROUP_DENIED, abort_refused, current_caller
from node.security.auth_helper import Refusal
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


def _refused_whole(context: grpc.ServicerContext, code: int, message: str) -> None:
    """A call refused on its group is answered as the gRPC API answers every refusal of a
    whole call: PERMISSION_DENIED with the Kafka code in the trailing metadata."""
    if code == GROUP_DENIED:
        abort_refused(context, [Refusal("", code, message)])


class GroupRpcs:
    """FindCoordinator, ConsumerGroupHeartbeat, OffsetCommit, TxnOffsetCommit, OffsetFetch,
    ListGroups,
    ConsumerGroupDescribe, DeleteGroups and OffsetDelete, handed to ``self._group_apis``
    (:class:`~node.apis.groups.GroupApis`), which holds their policy."""

    _group_apis: GroupApis | None = None
    _listener_name: str | None = None

    def _apis(self, context: grpc.ServicerContext) -> GroupApis:
        if self._group_apis is None:
            context.abort(grpc.StatusCode.UNIMPLEMENTED, "this server has no group coordinator")
            raise AssertionError("abort raises")  # pragma: no cover
        return self._group_apis

    def FindCoordinator(  # noqa: N802  (gRPC method names)
        self, request: pb.FindCoordinatorRequest, context: grpc.ServicerContext
    ) -> pb.FindCoordinatorResponse:
        # the coordinator's endpoint on the listener this request came in on (Kafka's rule)
        coordinators = self._apis(context).find_coordinator(
            current_caller(), list(request.group_ids), self._listener_name
        )
        for c in coordinators:
            _refused_whole(context, c.error_code, c.error_message)
        return wire.find_coordinator_to_wire(coordinators)

    def ConsumerGroupHeartbeat(  # noqa: N802
        self, request: pb.ConsumerGroupHeartbeatRequest, context: grpc.ServicerContext
    ) -> pb.ConsumerGroupHeartbeatResponse:
        heartbeat = wire.heartbeat_from_wire(request, _client_host(context))
        answer = self._apis(context).consumer_group_heartbeat(current_caller(), heartbeat)
        _refused_whole(context, answer.error_code, answer.error_message)
        return wire.heartbeat_to_wire(answer)

    def OffsetCommit(  # noqa: N802
        self, request: pb.OffsetCommitRequest, context: grpc.ServicerContext
    ) -> pb.OffsetCommitResponse:
        result = self._apis(context).offset_commit(
            current_caller(),
            request.group_id,
            request.member_id,
            request.member_epoch,
            wire.offset_commit_from_wire(request),
        )
        if result.partitions:
            first = result.partitions[0]
            _refused_whole(context, result.error_code, first.error_message)
        return wire.offset_commit_to_wire(result)

    def TxnOffsetCommit(  # noqa: N802
        self, request: pb.TxnOffsetCommitRequest, context: grpc.ServicerContext
    ) -> pb.OffsetCommitResponse:
        result = (
            self._apis(context)
            .txn_offset_commit_later(
                current_caller(),
                request.transactional_id,
                request.group_id,
                request.producer_id,
                request.producer_epoch,
                wire.offset_commit_from_wire(request),
                member_id=request.member_id,
                generation_id=request.generation_id,
                instance_id=(
                    request.group_instance_id if request.HasField("group_instance_id") else None
                ),
            )
            .result()
        )
        if result.partitions:
            _refused_whole(context, result.error_code, result.partitions[0].error_message)
        return wire.offset_commit_to_wire(result)

    def OffsetFetch(  # noqa: N802
        self, request: pb.OffsetFetchRequest, context: grpc.ServicerContext
    ) -> pb.OffsetFetchResponse:
        wanted = (
            None
            if request.all_topics
            else [(t.name, p) for t in request.topics for p in t.partitions]
        )
        result = self._apis(context).offset_fetch(
            current_caller(), request.group_id, request.member_id, request.member_epoch, wanted
        )
        _refused_whole(context, result.error_code, result.error_message)
        return wire.offset_fetch_to_wire(result)

    def ListGroups(  # noqa: N802
        self, request: pb.ListGroupsRequest, context: grpc.ServicerContext
    ) -> pb.ListGroupsResponse:
        result = self._apis(context).list_groups(
            current_caller(), list(request.states_filter), list(request.types_filter)
        )
        return wire.list_groups_to_wire(result)

    def ConsumerGroupDescribe(  # noqa: N802
        self, request: pb.ConsumerGroupDescribeRequest, context: grpc.ServicerContext
    ) -> pb.ConsumerGroupDescribeResponse:
        # odradek's describe of either kind of group (the SDK's and the console's), where
        # Kafka's ConsumerGroupDescribe answers GROUP_ID_NOT_FOUND for a classic group
        groups = self._apis(context).describe_groups(current_caller(), list(request.group_ids))
        for g in groups:
            _refused_whole(context, g.error_code, g.error_message)
        return wire.described_groups_to_wire(groups)

    def DeleteGroups(  # noqa: N802
        self, request: pb.DeleteGroupsRequest, context: grpc.ServicerContext
    ) -> pb.DeleteGroupsResponse:
        results = self._apis(context).delete_groups(current_caller(), list(request.group_ids))
        for r in results:
            _refused_whole(context, r.error_code, r.error_message)
        return wire.deleted_groups_to_wire(results)

    def OffsetDelete(  # noqa: N802
        self, request: pb.OffsetDeleteRequest, context: grpc.ServicerContext
    ) -> pb.OffsetDeleteResponse:
        partitions = [(t.name, p) for t in request.topics for p in t.partitions]
        result = self._apis(context).offset_delete(current_caller(), request.group_id, partitions)
        _refused_whole(context, result.error_code, result.error_message)
        return wire.offset_delete_to_wire(result)
