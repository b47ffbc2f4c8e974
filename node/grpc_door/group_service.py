"""The consumer group RPCs of the Broker service, served by
:mod:`node.coordinator.group_coordinator`.

:class:`GroupRpcs` is a mixin of the node's Broker servicer
(:class:`node.grpc_door.service.BrokerServicer`)
holding the group RPCs (those at the end of the Broker service in the proto). Thin: each handler
hands the request to the coordinator, which answers with Kafka error codes in the response; a
servicer without a coordinator answers gRPC UNIMPLEMENTED. Handlers run on the server's worker
threads and may block while a write waits for the high watermark.
"""

from __future__ import annotations

import grpc

from node.coordinator.group_coordinator import GroupCoordinator
from node.grpc_door.authentication import current_request
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

    def _coordinator(self, context: grpc.ServicerContext) -> GroupCoordinator:
        if self._groups is None:
            context.abort(grpc.StatusCode.UNIMPLEMENTED, "this server has no group coordinator")
            raise AssertionError("abort raises")  # pragma: no cover
        return self._groups

    def FindCoordinator(  # noqa: N802  (gRPC method names)
        self, request: pb.FindCoordinatorRequest, context: grpc.ServicerContext
    ) -> pb.FindCoordinatorResponse:
        return self._coordinator(context).find_coordinator(request)

    def ConsumerGroupHeartbeat(  # noqa: N802
        self, request: pb.ConsumerGroupHeartbeatRequest, context: grpc.ServicerContext
    ) -> pb.ConsumerGroupHeartbeatResponse:
        return self._coordinator(context).consumer_group_heartbeat(request, _client_host(context))

    def OffsetCommit(  # noqa: N802
        self, request: pb.OffsetCommitRequest, context: grpc.ServicerContext
    ) -> pb.OffsetCommitResponse:
        return self._coordinator(context).offset_commit(request)

    def OffsetFetch(  # noqa: N802
        self, request: pb.OffsetFetchRequest, context: grpc.ServicerContext
    ) -> pb.OffsetFetchResponse:
        return self._coordinator(context).offset_fetch(request)

    def ListGroups(  # noqa: N802
        self, request: pb.ListGroupsRequest, context: grpc.ServicerContext
    ) -> pb.ListGroupsResponse:
        return self._coordinator(context).list_groups(request)

    def ConsumerGroupDescribe(  # noqa: N802
        self, request: pb.ConsumerGroupDescribeRequest, context: grpc.ServicerContext
    ) -> pb.ConsumerGroupDescribeResponse:
        return self._coordinator(context).describe_groups(request)

    def DeleteGroups(  # noqa: N802
        self, request: pb.DeleteGroupsRequest, context: grpc.ServicerContext
    ) -> pb.DeleteGroupsResponse:
        return self._coordinator(context).delete_groups(request)

    def OffsetDelete(  # noqa: N802
        self, request: pb.OffsetDeleteRequest, context: grpc.ServicerContext
    ) -> pb.OffsetDeleteResponse:
        return self._coordinator(context).offset_delete(request)
