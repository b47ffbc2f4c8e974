"""The consumer group RPCs of the Broker service, served by :mod:`node.group_coordinator`.

:class:`GroupBrokerServicer` is the node's Broker servicer with the group RPCs added (the RPCs
at the end of the Broker service in the proto). Thin: each handler hands the request to the
coordinator, which answers with Kafka error codes in the response. Handlers run on the server's
worker threads and may block while a write waits for the high watermark.
"""

from __future__ import annotations

from typing import Any

import grpc

from node.group_coordinator import GroupCoordinator
from node.service import BrokerServicer
from odradek.v1 import odradek_pb2 as pb


def _client_host(context: grpc.ServicerContext) -> str:
    """Kafka's ClientHost: ``/`` and the peer's address (``ipv4:127.0.0.1:5000`` → the
    address without the port)."""
    peer = context.peer() or ""
    address = peer.split(":", 1)[1] if ":" in peer else peer
    host = address.rsplit(":", 1)[0] if address.count(":") >= 1 else address
    return "/" + host.strip("[]")


class GroupBrokerServicer(BrokerServicer):
    """The Broker service with FindCoordinator, ConsumerGroupHeartbeat, OffsetCommit,
    OffsetFetch, ListGroups, ConsumerGroupDescribe, DeleteGroups and OffsetDelete."""

    def __init__(self, groups: GroupCoordinator, *args: Any, **kwargs: Any) -> None:
        """``args``/``kwargs``: :class:`BrokerServicer`'s."""
        super().__init__(*args, **kwargs)
        self._groups = groups

    def FindCoordinator(  # noqa: N802  (gRPC method names)
        self, request: pb.FindCoordinatorRequest, context: grpc.ServicerContext
    ) -> pb.FindCoordinatorResponse:
        return self._groups.find_coordinator(request)

    def ConsumerGroupHeartbeat(  # noqa: N802
        self, request: pb.ConsumerGroupHeartbeatRequest, context: grpc.ServicerContext
    ) -> pb.ConsumerGroupHeartbeatResponse:
        return self._groups.consumer_group_heartbeat(request, _client_host(context))

    def OffsetCommit(  # noqa: N802
        self, request: pb.OffsetCommitRequest, context: grpc.ServicerContext
    ) -> pb.OffsetCommitResponse:
        return self._groups.offset_commit(request)

    def OffsetFetch(  # noqa: N802
        self, request: pb.OffsetFetchRequest, context: grpc.ServicerContext
    ) -> pb.OffsetFetchResponse:
        return self._groups.offset_fetch(request)

    def ListGroups(  # noqa: N802
        self, request: pb.ListGroupsRequest, context: grpc.ServicerContext
    ) -> pb.ListGroupsResponse:
        return self._groups.list_groups(request)

    def ConsumerGroupDescribe(  # noqa: N802
        self, request: pb.ConsumerGroupDescribeRequest, context: grpc.ServicerContext
    ) -> pb.ConsumerGroupDescribeResponse:
        return self._groups.describe_groups(request)

    def DeleteGroups(  # noqa: N802
        self, request: pb.DeleteGroupsRequest, context: grpc.ServicerContext
    ) -> pb.DeleteGroupsResponse:
        return self._groups.delete_groups(request)

    def OffsetDelete(  # noqa: N802
        self, request: pb.OffsetDeleteRequest, context: grpc.ServicerContext
    ) -> pb.OffsetDeleteResponse:
        return self._groups.offset_delete(request)
