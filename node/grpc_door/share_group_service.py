"""The share group RPCs (KIP-932) of the Broker service: ShareGroupHeartbeat and
ShareGroupDescribe, handed to :class:`~node.apis.share_groups.ShareGroupApis`.

A mixin of the node's Broker servicer (:class:`node.grpc_door.service.BrokerServicer`), as
:class:`~node.grpc_door.group_service.GroupRpcs`: each handler translates the protobuf request
to the plain values of :mod:`node.share_group.share_group`, calls the API, translates the
answer back (Kafka error codes in it; a call refused on its group is PERMISSION_DENIED with
the code in the trailing metadata, as every refused call of the gRPC API); a servicer without
a group coordinator answers UNIMPLEMENTED. Handlers run on the server's worker threads and may
block while the group's write waits for its replicas.
"""

from __future__ import annotations

import grpc

from node.apis.share_groups import ShareGroupApis
from node.grpc_door import group_translate as wire
from node.grpc_door.group_service import _client_host, _refused_whole
from node.grpc_door.request_checks import current_caller
from node.share_group.share_group import ShareHeartbeatRequest
from odradek.v1 import odradek_pb2 as pb

__all__ = ["ShareGroupRpcs"]


class ShareGroupRpcs:
    """ShareGroupHeartbeat and ShareGroupDescribe over ``self._share_group_apis``."""

    _share_group_apis: ShareGroupApis | None = None

    def _share_groups(self, context: grpc.ServicerContext) -> ShareGroupApis:
        if self._share_group_apis is None:
            context.abort(grpc.StatusCode.UNIMPLEMENTED, "this server has no group coordinator")
            raise AssertionError("abort raises")  # pragma: no cover
        return self._share_group_apis

    def ShareGroupHeartbeat(  # noqa: N802  (gRPC method names)
        self, request: pb.ShareGroupHeartbeatRequest, context: grpc.ServicerContext
    ) -> pb.ShareGroupHeartbeatResponse:
        heartbeat = ShareHeartbeatRequest(
            group_id=request.group_id,
            member_id=request.member_id,
            member_epoch=request.member_epoch,
            rack_id=request.rack_id if request.HasField("rack_id") else None,
            subscribed_topic_names=(
                tuple(request.subscribed_topic_names)
                if request.has_subscribed_topic_names
                else None
            ),
            client_id=request.client_id,
            client_host=_client_host(context),
        )
        answer = self._share_groups(context).share_group_heartbeat(current_caller(), heartbeat)
        _refused_whole(context, answer.error_code, answer.error_message)
        wired = wire.heartbeat_to_wire(answer)
        return pb.ShareGroupHeartbeatResponse(
            error_code=wired.error_code,
            error_message=wired.error_message,
            member_id=wired.member_id,
            member_epoch=wired.member_epoch,
            heartbeat_interval_ms=wired.heartbeat_interval_ms,
            has_assignment=wired.has_assignment,
            assignment=wired.assignment,
        )

    def ShareGroupDescribe(  # noqa: N802
        self, request: pb.ShareGroupDescribeRequest, context: grpc.ServicerContext
    ) -> pb.ShareGroupDescribeResponse:
        groups = self._share_groups(context).share_group_describe(
            current_caller(), list(request.group_ids)
        )
        for g in groups:
            _refused_whole(context, g.error_code, g.error_message)
        return pb.ShareGroupDescribeResponse(groups=wire.described_groups_to_wire(groups).groups)
