"""The share coordinator's RPCs on the Replication service (inter-broker only: a partition
leader's persister calls them, :mod:`node.replication.share_state_channel`):
InitializeShareGroupState, ReadShareGroupState, WriteShareGroupState, DeleteShareGroupState and
ReadShareGroupStateSummary, each handed to the node's
:class:`~node.share_coordinator.share_coordinator.ShareCoordinator` and answered with Kafka's
error code (a node without one answers NOT_COORDINATOR). Thin: decode, call, encode. With the
authorizer on, they need CLUSTER_ACTION as every Replication call
(:mod:`node.grpc_door.authorizing_services`). Thread-safe; a call blocks its worker thread
while its write replicates."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import grpc

from node.replication.share_state_wire import batches_from_wire, batches_to_wire, key_from_wire
from node.share.persister import ShareSnapshot
from node.share_coordinator.share_coordinator import ShareCoordinator
from odradek.errors import InvalidRequestError, NotCoordinatorError, OdradekError
from odradek.v1 import odradek_pb2 as pb

__all__ = ["ShareStateRpcs"]

_T = TypeVar("_T")


class ShareStateRpcs:
    """The share-state RPCs, handed to ``self._share_coordinator``."""

    _share_coordinator: ShareCoordinator | None = None

    def _share_call(self, call: Callable[[ShareCoordinator], _T]) -> _T | OdradekError:
        coordinator = self._share_coordinator
        if coordinator is None:
            return NotCoordinatorError("this node has no share coordinator")
        try:
            return call(coordinator)
        except OdradekError as e:
            return e
        except ValueError as e:  # a delivery state that is not Kafka's
            return InvalidRequestError(str(e))

    def InitializeShareGroupState(  # noqa: N802  (gRPC method names)
        self, request: pb.InitializeShareGroupStateRequest, context: grpc.ServicerContext
    ) -> pb.ShareStateResponse:
        key = key_from_wire(request.key)
        done = self._share_call(
            lambda c: c.initialize(key, request.state_epoch, request.start_offset)
        )
        return _status(done)

    def ReadShareGroupState(  # noqa: N802
        self, request: pb.ReadShareGroupStateRequest, context: grpc.ServicerContext
    ) -> pb.ReadShareGroupStateResponse:
        key = key_from_wire(request.key)
        snapshot = self._share_call(lambda c: c.read(key, request.leader_epoch))
        if isinstance(snapshot, OdradekError):
            return pb.ReadShareGroupStateResponse(
                error_code=snapshot.code, error_message=snapshot.message
            )
        return pb.ReadShareGroupStateResponse(
            state_epoch=snapshot.state_epoch,
            start_offset=snapshot.start_offset,
            leader_epoch=snapshot.leader_epoch,
            batches=batches_to_wire(snapshot.batches),
        )

    def WriteShareGroupState(  # noqa: N802
        self, request: pb.WriteShareGroupStateRequest, context: grpc.ServicerContext
    ) -> pb.ShareStateResponse:
        key = key_from_wire(request.key)
        done = self._share_call(
            lambda c: c.write(
                key,
                ShareSnapshot(
                    request.state_epoch,
                    request.start_offset,
                    request.leader_epoch,
                    batches_from_wire(request.batches),
                ),
            )
        )
        return _status(done)

    def DeleteShareGroupState(  # noqa: N802
        self, request: pb.DeleteShareGroupStateRequest, context: grpc.ServicerContext
    ) -> pb.ShareStateResponse:
        key = key_from_wire(request.key)
        return _status(self._share_call(lambda c: c.delete(key)))

    def ReadShareGroupStateSummary(  # noqa: N802
        self, request: pb.ReadShareGroupStateSummaryRequest, context: grpc.ServicerContext
    ) -> pb.ReadShareGroupStateSummaryResponse:
        key = key_from_wire(request.key)
        found = self._share_call(lambda c: c.read_summary(key))
        if isinstance(found, OdradekError):
            return pb.ReadShareGroupStateSummaryResponse(
                error_code=found.code, error_message=found.message
            )
        return pb.ReadShareGroupStateSummaryResponse(
            state_epoch=found.state_epoch, start_offset=found.start_offset
        )


def _status(done: object) -> pb.ShareStateResponse:
    if isinstance(done, OdradekError):
        return pb.ShareStateResponse(error_code=done.code, error_message=done.message)
    return pb.ShareStateResponse()
