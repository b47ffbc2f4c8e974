"""The Controller gRPC service: brokers' AlterPartition, ControlledShutdown and BrokerHeartbeat
requests.

Every node serves it; only the active controller answers with anything but NOT_CONTROLLER (41)
at the request level. The handlers run on gRPC threads and hand the request over to the
controller's event thread, waiting at most ``request_timeout_ms`` (then REQUEST_TIMED_OUT, 7);
BrokerHeartbeat is answered on the gRPC thread itself.
The rules themselves are in :mod:`controller.isr` and :class:`controller.controller.Controller`.

Register it with ``pb_grpc.add_ControllerServicer_to_server(ControllerServicer(controller),
server)``. Thread-safe.
"""

from __future__ import annotations

import grpc

from controller.controller import Controller
from odradek.v1 import odradek_pb2 as pb
from odradek.v1 import odradek_pb2_grpc as pb_grpc

__all__ = ["ControllerServicer"]


class ControllerServicer(pb_grpc.ControllerServicer):
    """Serves the Controller service for one node's :class:`Controller` candidate."""

    def __init__(self, controller: Controller) -> None:
        self._controller = controller

    def AlterPartition(  # noqa: N802 - gRPC method name
        self, request: pb.AlterPartitionRequest, context: grpc.ServicerContext
    ) -> pb.AlterPartitionResponse:
        """Per partition: FENCED_LEADER_EPOCH (74), INVALID_UPDATE_VERSION (95),
        INELIGIBLE_REPLICA (107), ... or the new state; request level: NOT_CONTROLLER (41),
        STALE_BROKER_EPOCH (77), REQUEST_TIMED_OUT (7)."""
        return self._controller.alter_partition(request)

    def ControlledShutdown(  # noqa: N802 - gRPC method name
        self, request: pb.ControlledShutdownRequest, context: grpc.ServicerContext
    ) -> pb.ControlledShutdownResponse:
        """The partitions the broker still leads (it retries until none remain); request
        level: NOT_CONTROLLER (41), STALE_BROKER_EPOCH (77), BROKER_NOT_AVAILABLE (8),
        REQUEST_TIMED_OUT (7)."""
        return self._controller.controlled_shutdown(request)

    def BrokerHeartbeat(  # noqa: N802 - gRPC method name
        self, request: pb.BrokerHeartbeatRequest, context: grpc.ServicerContext
    ) -> pb.BrokerHeartbeatResponse:
        """Whether the broker is fenced; request level: NOT_CONTROLLER (41),
        STALE_BROKER_EPOCH (77)."""
        return self._controller.broker_heartbeat(request)
